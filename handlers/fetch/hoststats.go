package fetch

import (
	"net/http"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// hostStatsTransport records each HTTP round trip of the fetch stage in the crawl's
// per-host figures (streams.HostStats) by host key, so that the dashboard can show the
// slowest and the most failing hosts of the crawl.
type hostStatsTransport struct {
	next  http.RoundTripper
	stats *streams.HostStats
}

func (t hostStatsTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	res, err := t.next.RoundTrip(r)
	t.stats.Add(spiders.HostKeyOf(r.URL), time.Since(start), err != nil || res.StatusCode >= 500)
	return res, err
}
