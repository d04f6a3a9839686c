package spiders

import (
	"fmt"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// Budget per: values.
const (
	// BudgetPerHost counts a budget per host name (BudgetHost): the ports of one host
	// share it.
	BudgetPerHost = "host"
	// BudgetPerDomain counts a budget per registered domain (eTLD+1 from the public
	// suffix list): a.shop.example and b.shop.example share one.
	BudgetPerDomain = "domain"
)

// Budget bounds what one host, or one registered domain, may take of a crawl, so that a
// crawler trap (an endless calendar, a session ID in every link) cannot eat it. The
// frontier enforces it in Redis for every worker at once: a request over it is dropped
// and counted (dropped_budget), never queued. In YAML, under settings:
//
//	budget:
//	  pages_per_host: 1000
//	  bytes_per_host: 50MB
//	  per: domain   # or host (the default)
//
// Zero values mean no budget, and then nothing is kept per host.
type Budget struct {
	// PagesPerHost is the most requests ever queued per host (or domain): new URLs
	// found after it are dropped. Retries, robots.txt requeues and scheduled revisits
	// of a URL already queued do not count again. 0: no limit.
	PagesPerHost int64 `yaml:"pages_per_host"`
	// BytesPerHost is the most response body bytes fetched per host (or domain): once
	// its fetches passed it, the host's waiting requests are dropped and new ones
	// refused. Requests already handed to fetchers are still fetched. 0: no limit.
	BytesPerHost ByteSize `yaml:"bytes_per_host"`
	// Per is what a budget counts: "host" (the default: a host name, its ports
	// together) or "domain".
	Per string `yaml:"per"`
}

// On reports whether the budget bounds anything.
func (b Budget) On() bool { return b.PagesPerHost > 0 || b.BytesPerHost > 0 }

// PerDomain reports whether the budget counts per registered domain.
func (b Budget) PerDomain() bool { return b.Per == BudgetPerDomain }

// Validate reports a budget out of range.
func (b Budget) Validate() error {
	switch {
	case b.PagesPerHost < 0:
		return negative("budget.pages_per_host", b.PagesPerHost)
	case b.BytesPerHost < 0:
		return negative("budget.bytes_per_host", b.BytesPerHost)
	case b.Per != "" && b.Per != BudgetPerHost && b.Per != BudgetPerDomain:
		return fmt.Errorf("spiders: settings.budget.per %q: want host or domain", b.Per)
	case b.Per != "" && !b.On():
		return fmt.Errorf("spiders: settings.budget.per %q without pages_per_host or bytes_per_host bounds nothing", b.Per)
	}
	return nil
}

// BudgetHost returns the name of a host key (HostKey) without its port, which budgets
// per: host count under: shop.example for shop.example:8080, 127.0.0.1 for
// 127.0.0.1:8081. The ports of one host share its budget, so that a trap that links
// to the same pages on another port (or a server listening on hundreds) cannot spend
// a budget once per port.
func BudgetHost(host string) string {
	name := HostKeyName(host)
	if strings.Contains(name, ":") {
		return "[" + name + "]" // an IPv6 address, written as in a URL
	}
	return name
}

// BudgetDomain returns the registered domain of a host key (HostKey), which budgets
// per: domain count under: shop.example for a.shop.example:8080. A host without one
// (an IP address, localhost, a public suffix itself) is its own domain: its name
// without the port (BudgetHost), for the same reason as there.
func BudgetDomain(host string) string {
	d, err := publicsuffix.EffectiveTLDPlusOne(HostKeyName(host))
	if err != nil {
		return BudgetHost(host)
	}
	return d
}
