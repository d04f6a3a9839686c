package spiders_test

import (
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders"
)

func TestBudgetFromYAML(t *testing.T) {
	t.Parallel()
	sp, _, err := spiders.Parse("b.yaml", []byte(`
name: b
start_urls: ["http://127.0.0.1/"]
settings:
  budget: {per: domain, pages_per_host: 1000, bytes_per_host: 50MB}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := spiders.Budget{PagesPerHost: 1000, BytesPerHost: 50 << 20, Per: spiders.BudgetPerDomain}
	if sp.Settings.Budget != want {
		t.Fatalf("budget %+v, want %+v", sp.Settings.Budget, want)
	}
	for _, c := range []struct{ yaml, err string }{
		{"{pages_per_host: -1}", "settings.budget.pages_per_host -1 is negative"},
		{"{bytes_per_host: -5}", "settings.budget.bytes_per_host: invalid size"},
		{"{pages_per_host: 5, per: site}", `settings.budget.per "site": want host or domain`},
		{"{per: domain}", "without pages_per_host or bytes_per_host bounds nothing"},
		{"{pages: 5}", "pages"},
	} {
		_, _, err := spiders.Parse("b.yaml", []byte("name: b\nstart_urls: [\"http://127.0.0.1/\"]\nsettings:\n  budget: "+c.yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("budget %s: error %v, want one saying %q", c.yaml, err, c.err)
		}
	}
}

func TestBudgetDomain(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]string{
		"a.shop.example":      "shop.example",
		"b.shop.example:8080": "shop.example",
		"shop.example":        "shop.example",
		"www.bbc.co.uk":       "bbc.co.uk",
		"a.b.github.io":       "b.github.io", // a private suffix: each user's site its own
		"127.0.0.1:8080":      "127.0.0.1",   // an address is its own domain, its ports together
		"[::1]:8080":          "[::1]",
		"localhost:81":        "localhost",
		"localhost":           "localhost",
		"co.uk":               "co.uk",
	} {
		if got := spiders.BudgetDomain(host); got != want {
			t.Errorf("BudgetDomain(%q) = %q, want %q", host, got, want)
		}
	}
}

// TestBudgetHost: a per: host budget counts a host name, its ports together.
func TestBudgetHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]string{
		"shop.example":        "shop.example",
		"a.shop.example:8080": "a.shop.example",
		"127.0.0.1:8081":      "127.0.0.1",
		"[::1]:8080":          "[::1]",
		"localhost":           "localhost",
	} {
		if got := spiders.BudgetHost(host); got != want {
			t.Errorf("BudgetHost(%q) = %q, want %q", host, got, want)
		}
	}
}
