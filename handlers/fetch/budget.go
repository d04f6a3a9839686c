package fetch

import (
	"context"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// spendBytes adds a fetched body's bytes to its host's budget (settings.budget
// bytes_per_host; the frontier counts them per host or per domain) and logs the host's
// waiting requests the frontier dropped once it is over. A failure is logged: the
// budget then misses this page's bytes, and the fetch stands.
func (f *Fetcher) spendBytes(ctx context.Context, host string, res *spiders.Response) {
	if f.settings.Budget.BytesPerHost <= 0 || f.hosts == nil || res == nil {
		return
	}
	n, err := f.hosts.SpendBytes(ctx, host, int64(len(res.Body)))
	switch {
	case err != nil:
		f.log.Warn("counting a page's bytes against its host's budget failed", zap.String("host", host), zap.Error(err))
	case n > 0:
		f.log.Info("host over its bytes budget: dropped its waiting requests", zap.String("host", host), zap.Int("requests", n))
	}
}
