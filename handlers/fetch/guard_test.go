package fetch

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

func TestIsBlockedIP(t *testing.T) {
	for addr, want := range map[string]bool{
		"169.254.169.254": true, // cloud metadata
		"10.0.0.1":        true,
		"172.16.5.4":      true,
		"192.168.1.1":     true,
		"127.0.0.1":       true,
		"::1":             true,
		"fe80::1":         true,
		"0.0.0.0":         true,
		"100.64.0.1":      true,
		"::ffff:10.0.0.1": true,
		"224.0.0.1":       true,
		"8.8.8.8":         false,
		"1.1.1.1":         false,
		"2606:4700::1111": false,
	} {
		if got := isBlockedIP(netip.MustParseAddr(addr)); got != want {
			t.Errorf("isBlockedIP(%s) = %v, want %v", addr, got, want)
		}
	}
}

// TestFetchRefusesPrivateAddressesBeforeConnecting: the guard runs in the dialer before
// connect(2), so these requests send no packet at all.
func TestFetchRefusesPrivateAddressesBeforeConnecting(t *testing.T) {
	s := spiders.Settings{ConnectTimeout: time.Second}
	s.SetDefaults()
	client := newHTTPClient(s)
	f := &httpFetch{shared: &shared{settings: s}, client: client}
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://[::1]:9/"} {
		_, _, _, err := f.roundTrip(context.Background(), &spiders.Request{URL: u})
		if !errors.Is(err, errBlockedAddress) { // returned by the dialer's Control, before connect
			t.Errorf("fetch %s: error %v, want the blocked-address error", u, err)
		}
	}
}

// TestAllowNetworksLetsOnlyTheListedTargetsThrough: with 127.0.0.1/32 and a host name
// allowed, the rest of loopback, link-local and private ranges stay blocked.
func TestAllowNetworksLetsOnlyTheListedTargetsThrough(t *testing.T) {
	s := spiders.Settings{AllowNetworks: []string{"127.0.0.1/32", "10.1.2.0/24", "fd00::1", "Intranet.Example."}}
	prefixes, hosts, err := s.Networks()
	if err != nil {
		t.Fatal(err)
	}
	g := newNetGuard(prefixes, hosts)
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "10.1.2.77": true, "fd00::1": true, "::ffff:127.0.0.1": true, "8.8.8.8": true,
		"127.0.0.2": false, "10.1.3.1": false, "169.254.169.254": false, "192.168.0.1": false, "::1": false, "fd00::2": false,
	} {
		if got := g.allowedIP(netip.MustParseAddr(addr)); got != want {
			t.Errorf("allowedIP(%s) = %v, want %v", addr, got, want)
		}
	}
	if !g.hosts["intranet.example"] {
		t.Errorf("host names %v, want intranet.example", g.hosts)
	}
}
