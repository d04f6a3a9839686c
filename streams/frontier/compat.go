package frontier

import (
	"net"
	"strings"

	"github.com/streamcrawl/streamcrawl/streams"
)

// The crawl's keys and layout moved to package streams; these names stay until the
// callers outside streams/ follow.

// Keys is streams.Keys.
type Keys = streams.Keys

// Layout is streams.Layout.
type Layout = streams.Layout

// MaxPartitions is streams.MaxPartitions.
const MaxPartitions = streams.MaxPartitions

// NewKeys is streams.NewKeys.
func NewKeys(crawl string) Keys { return streams.NewKeys(crawl) }

// NewLayout is streams.NewLayout.
func NewLayout(crawl string, p int) Layout { return streams.NewLayout(crawl, p) }

// OpenLayout is streams.OpenLayout.
var OpenLayout = streams.OpenLayout

// ReadLayout is streams.ReadLayout.
var ReadLayout = streams.ReadLayout

// DeadOf is streams.DeadOf.
func DeadOf(stream string) string { return streams.DeadOf(stream) }

// NormalHost is the one name of a host ("name" or "name:port", as in a URL) that the
// crawl uses everywhere: partition, host queue, schedule, leases, limit rules and
// robots.txt cache. It lower-cases host and drops a port 80 or 443, so that
// Shop.example:80 and shop.example are one host.
func NormalHost(host string) string {
	host = strings.ToLower(host)
	if h, port, err := net.SplitHostPort(host); err == nil && (port == "80" || port == "443") {
		if strings.Contains(h, ":") {
			return "[" + h + "]"
		}
		return h
	}
	return host
}
