package fleet

import (
	"github.com/streamcrawl/streamcrawl/spiders"
)

// SharedHosts returns the predicate of handlers.Options.SharedHosts for a fleet serving
// spiders: whether two or more of them can reach a host (a spiders.HostKey), so that
// their requests there pass the host's fleet-wide politeness gate and the site sees one
// crawler. A spider reaches the hosts of its allowed domains (and their subdomains, on
// any port) and of its start and sitemap URLs; one without allowed domains reaches
// every host, so two of those share every host (and pay the gate on every request). A
// spider whose allowed domains do not parse counts as reaching every host: the gate
// costs a little, a missed share costs the site.
//
// Hosts that only one spider can reach pay nothing. The predicate is safe for
// concurrent use; build a new one when the fleet's spiders change.
func SharedHosts(sps []*spiders.Spider) func(host string) bool {
	type reach struct {
		scope *spiders.Scope // nil: every host
		hosts map[string]bool
	}
	var reaches []reach
	everywhere := 0
	for _, sp := range sps {
		if sp == nil {
			continue
		}
		var scope *spiders.Scope
		if len(sp.AllowedDomains) > 0 {
			scope, _ = spiders.NewScope(sp.AllowedDomains, 0)
		}
		if scope == nil {
			everywhere++
			continue
		}
		r := reach{scope: scope, hosts: map[string]bool{}}
		for _, u := range append(append([]string(nil), sp.StartURLs...), sp.SitemapURLs...) {
			if h := spiders.HostKey(u); h != "" {
				r.hosts[h] = true
			}
		}
		reaches = append(reaches, r)
	}
	switch {
	case everywhere >= 2:
		return func(string) bool { return true }
	case everywhere+len(reaches) < 2:
		return func(string) bool { return false }
	}
	return func(host string) bool {
		n := everywhere
		for _, r := range reaches {
			if r.hosts[host] {
				n++
			} else if ok, _ := r.scope.Allows(&spiders.Request{URL: "http://" + host + "/"}); ok {
				n++
			}
			if n >= 2 {
				return true
			}
		}
		return false
	}
}
