package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"syscall"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// errBlockedAddress is returned for connections to addresses a crawler must not reach
// unless the spider allows them (allow_networks or allow_private_networks).
var errBlockedAddress = errors.New("blocked address")

// blockedPrefixes are the non-public ranges net/netip has no predicate for.
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network"
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("64:ff9b:1::/48"),
}

// isBlockedIP reports loopback, private, link-local (cloud metadata at 169.254.169.254
// included), unspecified, multicast and other non-public addresses.
func isBlockedIP(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// netGuard refuses connections to non-public addresses except the ones the spider
// allows by prefix or by host name. It runs after DNS resolution, for every connection,
// redirects included, so neither a host name resolving to 127.0.0.1 nor a redirect to
// 169.254.169.254 gets through.
type netGuard struct {
	prefixes []netip.Prefix
	hosts    map[string]bool
	proxies  map[string]bool // host:port of the spider's proxies, dialled as they are
}

// newGuard returns the guard of the spider's settings, nil when private networks are
// allowed.
func newGuard(s spiders.Settings) *netGuard {
	if s.PrivateNetworksAllowed() {
		return nil
	}
	prefixes, hosts, _ := s.Networks() // checked by Settings.Validate
	g := newNetGuard(prefixes, hosts)
	for _, raw := range s.Proxies {
		if u, err := spiders.ParseProxy(raw); err == nil {
			g.proxies[dialKey(u.Host)] = true
		}
	}
	return g
}

func newNetGuard(prefixes []netip.Prefix, hosts []string) *netGuard {
	g := &netGuard{prefixes: prefixes, hosts: map[string]bool{}, proxies: map[string]bool{}}
	for _, h := range hosts {
		g.hosts[h] = true
	}
	return g
}

// allowedIP reports whether ip may be connected to.
func (g *netGuard) allowedIP(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !isBlockedIP(ip) {
		return true
	}
	for _, p := range g.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// control is a net.Dialer Control function: it refuses addresses allowedIP refuses.
func (g *netGuard) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", errBlockedAddress, address)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s", errBlockedAddress, address)
	}
	if !g.allowedIP(ip) {
		return fmt.Errorf("%w: %s is not a public address (list it in allow_networks to crawl it)", errBlockedAddress, ip)
	}
	return nil
}

// dialer returns a DialContext that guards d: a host named in the allow list is dialled
// with d as it is, any other through the guard.
func (g *netGuard) dialer(d net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	open := d
	d.Control = g.control
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		key := dialKey(addr)
		if g.proxies[key] { // configured by the operator, not found on a page
			return open.DialContext(ctx, network, addr)
		}
		if len(g.hosts) > 0 && g.hosts[spiders.HostKeyName(key)] {
			return open.DialContext(ctx, network, addr)
		}
		return d.DialContext(ctx, network, addr)
	}
}

// dialKey is the host key of a dialled address (host:port, whatever the scheme: the
// port is kept).
func dialKey(addr string) string { return spiders.HostKeyOf(&url.URL{Host: addr}) }
