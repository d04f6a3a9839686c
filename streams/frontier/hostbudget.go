package frontier

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// HostBudget bounds what one host, or every host of one budget key (a registered
// domain), may take of the crawl (the spider's budget setting). The emit script counts
// the requests it queues per key and drops, counted dropped_budget, those over Pages;
// SpendBytes counts body bytes per key and, once over Bytes, drops the host's waiting
// requests, and the emit refuses new ones. Without a budget the frontier keeps nothing
// per host for it; with one, a field or two per key in Keys.Budget and the top keys by
// use in Keys.BudgetTop.
type HostBudget struct {
	// Pages is the most requests ever queued per key; 0: no limit.
	Pages int64
	// Bytes is the most body bytes fetched per key; 0: no limit.
	Bytes int64
	// Key returns the budget key of a host (its key, spiders.HostKey): its registered
	// domain for a budget per domain. Nil: every host is its own key. In a partitioned
	// crawl a key's hosts may fall in different partitions, so the counters of a crawl
	// with a Key are crawl-wide and each emit reserves its share first.
	Key func(host string) string
}

// on reports whether the budget bounds anything.
func (b HostBudget) on() bool { return b.Pages > 0 || b.Bytes > 0 }

// budgetShared reports whether the budget counters are crawl-wide (see HostBudget.Key).
func (f *Frontier) budgetShared() bool {
	return f.cfg.Budget.Key != nil && len(f.layout.Parts) > 1
}

// budgetKeys returns the keys of the budget counters of host: its partition's, or the
// crawl-wide ones.
func (f *Frontier) budgetKeys(host string) streams.Keys {
	if f.budgetShared() {
		return f.layout.Global
	}
	return f.layout.ForHost(host)
}

// budgetKey returns the budget key of host.
func (f *Frontier) budgetKey(host string) string {
	if f.cfg.Budget.Key == nil {
		return host
	}
	return f.cfg.Budget.Key(host)
}

// budgetArgs returns the budget section of the emit script's arguments for call c (see
// emitBudgetLua), reserving its share of the crawl-wide counters first when they are.
func (f *Frontier) budgetArgs(ctx context.Context, c *partCall) ([]any, error) {
	b := f.cfg.Budget
	if !b.on() || c.n == 0 { // nothing to check: items only
		return []any{"0", 0, 0, 0, 0}, nil
	}
	shared := f.budgetShared()
	if f.cfg.Budget.Key == nil { // every host its own key, in its own partition
		return []any{"h", b.Pages, b.Bytes, budgetTop, 0}, nil
	}
	// The key of each host of the call, and the requests offered per key.
	keyOf, offered := map[string]string{}, map[string]int{}
	var hosts, keys []string
	for _, s := range c.shares {
		for i := 3; i < len(s.reqs); i += 5 {
			host := s.reqs[i].(string)
			key, ok := keyOf[host]
			if !ok {
				key = f.budgetKey(host)
				keyOf[host] = key
				hosts = append(hosts, host)
			}
			if _, ok := offered[key]; !ok {
				keys = append(keys, key)
			}
			offered[key]++
		}
	}
	mode := "h"
	if shared {
		mode = "r"
		a := make([]any, 0, 2*len(keys)+3)
		a = append(a, b.Pages, b.Bytes, budgetTop)
		for _, k := range keys {
			a = append(a, k, offered[k])
		}
		g := f.layout.Global
		took, err := budgetReserveScript.Run(ctx, f.rdb, []string{g.Budget, g.BudgetTop}, a...).Int64Slice()
		if err == nil && len(took) != len(keys) {
			err = errShortReply
		}
		if err != nil {
			return nil, fmt.Errorf("frontier: reserve host budgets: %w", err)
		}
		c.reserved = make(map[string]int64, len(keys))
		for i, k := range keys {
			c.reserved[k] = took[i]
		}
		c.keyOf = keyOf
	}
	a := make([]any, 0, 5+3*len(hosts))
	a = append(a, mode, b.Pages, b.Bytes, budgetTop, len(hosts))
	for _, h := range hosts {
		a = append(a, h, keyOf[h], c.reserved[keyOf[h]])
	}
	return a, nil
}

// giveBackBudget gives back what call c reserved of the crawl-wide budget counters and
// did not queue (reqs: its outcome bytes, one per request). Best effort, as for
// max_pages: a failure leaves some of a key's budget unspent.
func (f *Frontier) giveBackBudget(ctx context.Context, c *partCall, reqs string) {
	if c.reserved == nil {
		return
	}
	left := make(map[string]int64, len(c.reserved))
	for k, n := range c.reserved {
		left[k] = n
	}
	j := 0
	for _, s := range c.shares {
		for i := 3; i < len(s.reqs); i += 5 {
			if reqs[j] == 'q' {
				left[c.keyOf[s.reqs[i].(string)]]--
			}
			j++
		}
	}
	var a []any
	for k, n := range left {
		if n > 0 {
			a = append(a, k, n)
		}
	}
	if len(a) > 0 {
		g := f.layout.Global
		_ = budgetGiveBackScript.Run(ctx, f.rdb, []string{g.Budget, g.BudgetTop}, a...).Err()
	}
}

// SpendBytes adds n body bytes fetched from host (its key) to the host's budget and,
// once the host (or its domain) is over the budget's Bytes, drops the requests waiting
// in the host's queue, counted dropped_budget (in the partition's counters), and
// returns how many. The emit refuses the host's new requests from then on. A no-op
// without a bytes budget.
func (f *Frontier) SpendBytes(ctx context.Context, host string, n int64) (int, error) {
	b := f.cfg.Budget
	if b.Bytes <= 0 || n <= 0 {
		return 0, nil
	}
	c := &rkit.Call{Script: budgetBytesScript, Keys: []string{f.budgetKeys(host).Budget}, Args: []any{f.budgetKey(host), n, b.Bytes}}
	err := f.pipe.Do(ctx, c)
	var over int64
	if err == nil {
		over, err = c.Reply.(*redis.Cmd).Int64()
	}
	if err != nil {
		return 0, fmt.Errorf("frontier: count the bytes of host %s: %w", host, err)
	}
	if over == 0 {
		return 0, nil
	}
	return f.dropHost(ctx, host, "", "", "dropped_budget")
}
