package inspect

import (
	"context"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
)

// budgetTop is how many hosts (or domains) readBudgets returns at most.
const budgetTop = 20

// BudgetUse is what one host, or one registered domain, used of the crawl's budget
// (settings.budget).
type BudgetUse struct {
	// Key is the host (its key) or the registered domain the budget counts under.
	Key string `json:"key"`
	// Pages is how many of its requests were ever queued.
	Pages int64 `json:"pages"`
	// Bytes is how many body bytes its fetches brought.
	Bytes int64 `json:"bytes"`
}

// readBudgets returns the hosts (or domains) that queued the most requests under the
// crawl's budget, most first, at most budgetTop; none without a budget. It reads each
// partition's top hosts (kept trimmed by the frontier) and the crawl-wide ones, then
// their bytes: a few commands per partition, whatever the crawl's size.
func readBudgets(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) ([]BudgetUse, error) {
	where := l.Parts
	if len(l.Parts) > 1 {
		where = append([]streams.Keys{l.Global}, l.Parts...) // crawl-wide with a budget per domain
	}
	tops := make([]*redis.ZSliceCmd, len(where))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // errors are read per command
		for i, k := range where {
			tops[i] = p.ZRevRangeWithScores(ctx, k.BudgetTop, 0, budgetTop-1)
		}
		return nil
	})
	type use struct {
		BudgetUse
		hash  string
		bytes *redis.StringCmd
	}
	var uses []*use
	for i, c := range tops {
		zs, err := c.Result()
		if err != nil {
			return nil, fmt.Errorf("inspect: budget use: %w", err)
		}
		for _, z := range zs {
			key, _ := z.Member.(string)
			uses = append(uses, &use{BudgetUse: BudgetUse{Key: key, Pages: int64(z.Score)}, hash: where[i].Budget})
		}
	}
	sort.SliceStable(uses, func(i, j int) bool { return uses[i].Pages > uses[j].Pages })
	uses = uses[:min(len(uses), budgetTop)]
	if len(uses) == 0 {
		return nil, nil
	}
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, u := range uses {
			u.bytes = p.HGet(ctx, u.hash, u.Key+"|b")
		}
		return nil
	})
	out := make([]BudgetUse, len(uses))
	for i, u := range uses {
		u.Bytes, _ = u.bytes.Int64() // absent: no bytes counted
		out[i] = u.BudgetUse
	}
	return out, nil
}
