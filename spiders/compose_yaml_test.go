package spiders

import (
	"os"
	"testing"
)

// The shipped spider files load (the compose one names its site by host in allow_networks).
func TestShippedSpiderFilesLoad(t *testing.T) {
	for _, f := range []string{"../examples/shop.yaml", "../compose/spiders/shop.yaml", "../compose/spiders/shop-render.yaml",
		"../compose/spiders/outlet.yaml", "../compose/spiders/prices.yaml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sp, _, err := Parse(f, data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(sp.Settings.AllowNetworks) == 0 || sp.Settings.PrivateNetworksAllowed() {
			t.Errorf("%s: allow_networks %v, allow_private_networks %v; want the allow list only", f,
				sp.Settings.AllowNetworks, sp.Settings.PrivateNetworksAllowed())
		}
	}
}
