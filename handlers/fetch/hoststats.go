package fetch

import (
	"net/http"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// hostStatsTransport records each HTTP round trip of the fetch stage in the crawl's
// per-host figures (streams.Keys.HostStats) by host key, through counters flushed once a second, so
// that the dashboard can show the slowest and the most failing hosts of the whole crawl.
type hostStatsTransport struct {
	next     http.RoundTripper
	counters *streams.Counters
}

func (t hostStatsTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	res, err := t.next.RoundTrip(r)
	host := spiders.HostKeyOf(r.URL)
	t.counters.Add(host+"|n", 1)
	t.counters.Add(host+"|ms", time.Since(start).Milliseconds())
	if err != nil || res.StatusCode >= 500 {
		t.counters.Add(host+"|err", 1)
	}
	return res, err
}
