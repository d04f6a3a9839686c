package handlers

import (
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// hostBudget is the spider's budget setting as the frontier enforces it: per host name
// (spiders.BudgetHost: the ports of a host together), or per registered domain
// (spiders.BudgetDomain).
func hostBudget(b spiders.Budget) frontier.HostBudget {
	if !b.On() {
		return frontier.HostBudget{}
	}
	hb := frontier.HostBudget{Pages: b.PagesPerHost, Bytes: int64(b.BytesPerHost)}
	hb.Key = spiders.BudgetHost
	if b.PerDomain() {
		hb.Key = spiders.BudgetDomain
	}
	return hb
}
