package fetch

import (
	"path"
	"strings"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// leaseTTL is how long a host's slot stays taken when its fetcher dies: longer than any
// fetch (robots.txt first, then the page) may take.
func leaseTTL(s spiders.Settings) time.Duration { return 2*s.DownloadTimeout + 30*time.Second }

// Politeness sets the spider's per-host politeness on a frontier's config: the rule of
// hosts without a limit of their own, the limits' rules, and how long a slot stays
// taken when its fetcher died.
func Politeness(s spiders.Settings, c *frontier.Config) {
	c.Hosts, c.LeaseTTL, c.Rules = defaultRule(s), leaseTTL(s), hostRules(s)
}

// defaultRule is the spider's per-host politeness for hosts without a limit rule.
func defaultRule(s spiders.Settings) frontier.HostRule {
	return frontier.HostRule{Concurrency: max(s.PerHostConcurrency, 0), Delay: s.PerHostDelay}
}

// limitRule returns the rule of the spider's first limit whose glob matches host
// (a spiders.HostKey; its port ignored), nil when none does. A limit without a concurrency
// keeps the default concurrency.
func limitRule(s spiders.Settings, host string) *frontier.HostRule {
	if len(s.Limits) == 0 {
		return nil
	}
	name := spiders.HostKeyName(host)
	for _, l := range s.Limits {
		if ok, _ := path.Match(strings.ToLower(l.Domain), name); ok {
			r := frontier.HostRule{Concurrency: max(s.PerHostConcurrency, 0), Delay: l.Delay}
			if l.Concurrency > 0 {
				r.Concurrency = l.Concurrency
			}
			return &r
		}
	}
	return nil
}

// hostRules is limitRule of the spider, for the frontier (nil when it has no limits).
func hostRules(s spiders.Settings) func(string) *frontier.HostRule {
	if len(s.Limits) == 0 {
		return nil
	}
	return func(host string) *frontier.HostRule { return limitRule(s, host) }
}

// ruleOf is the politeness of host as this process knows it (the defaults or its limit
// rule): whether its requests come with a lease to give back, and whether it has a
// delay of its own. Crawl-delay and back-offs live in Redis.
func ruleOf(s spiders.Settings, host string) frontier.HostRule {
	if r := limitRule(s, host); r != nil {
		return *r
	}
	return defaultRule(s)
}
