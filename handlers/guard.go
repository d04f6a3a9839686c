package handlers

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// errBlockedAddress is returned for connections to addresses a crawler must not reach
// unless the spider allows private networks.
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

// guardDial is a net.Dialer Control function that refuses non-public addresses. It runs
// after DNS resolution, for every connection, redirects included, so neither a host name
// resolving to 127.0.0.1 nor a redirect to 169.254.169.254 gets through.
func guardDial(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", errBlockedAddress, address)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %s", errBlockedAddress, address)
	}
	if isBlockedIP(ip) {
		return fmt.Errorf("%w: %s is not a public address (set allow_private_networks: true to crawl it)", errBlockedAddress, ip)
	}
	return nil
}
