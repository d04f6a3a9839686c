package frontier

import (
	"context"
	"sync"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// budgetRecheck is how long Spent trusts what it last read.
const budgetRecheck = time.Second

// budget caches whether the crawl's max_pages budget is spent.
type budget struct {
	mu    sync.Mutex
	at    time.Time
	spent bool
}

// Spent reports whether the crawl's max_pages budget (Config.MaxRequests) is used up,
// so that no new request can be queued: a parser need not even look for a page's
// links, nor decode a sitemap. False without a budget, and when Redis does not answer
// (the emit decides anyway). It reads Redis at most once per second per Frontier, so a
// page costs nothing.
func (f *Frontier) Spent(ctx context.Context) bool {
	if f.cfg.MaxRequests <= 0 {
		return false
	}
	b := &f.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.at) < budgetRecheck {
		return b.spent
	}
	used, err := f.rdb.HGet(ctx, f.layout.Global.Stats, "max_pages_used").Int64()
	if err != nil && !rkit.ErrNil(err) {
		return b.spent // the last answer stands; asked again at the next recheck
	}
	b.at, b.spent = time.Now(), used >= f.cfg.MaxRequests
	return b.spent
}
