package fleet_test

import (
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
)

// TestFleetKeepsOneHostsPaceAcrossCrawls: two crawls of one site, each with
// per_host_concurrency 1 and per_host_delay 400ms, served by one worker: the site sees
// one crawler, its requests at least 400 ms apart (less 50 ms for the server's clock),
// although each crawl alone would keep that pace only for its own requests. Both crawls
// end done with their items exact.
func TestFleetKeepsOneHostsPaceAcrossCrawls(t *testing.T) {
	r := newRig(t)
	s := newShop(t, 10, 0)
	polite := func(name string) string {
		y := s.site.SpiderYAML(name, s.base)
		out := strings.Replace(y, "  per_host_concurrency: 32       # one host: let every fetch slot use it\n",
			"  per_host_concurrency: 1\n  per_host_delay: 400ms\n", 1)
		if out == y {
			t.Fatal("the demo spider's settings changed: per_host_concurrency not found")
		}
		return out
	}
	r.submit("one", polite("one"))
	r.submit("two", polite("two"))
	r.worker("w1")
	for _, name := range []string{"one", "two"} {
		r.waitState(name, fleet.Done, 3*time.Minute)
		r.checkShopItems(name, s)
	}
	s.mu.Lock()
	hits := append([]time.Time(nil), s.hits...)
	s.mu.Unlock()
	short, smallest := 0, time.Hour
	for i := 1; i < len(hits); i++ {
		gap := hits[i].Sub(hits[i-1])
		smallest = min(smallest, gap)
		if gap < 350*time.Millisecond {
			short++
		}
	}
	t.Logf("%d requests at the site, the smallest gap %s", len(hits), smallest)
	if want := 2 * len(s.site.ExpectedItems(s.base)); len(hits) < want {
		t.Errorf("%d requests at the site, want at least %d (both crawls fetch every page)", len(hits), want)
	}
	if short > 0 {
		t.Errorf("%d gaps between requests under 400ms (the smallest %s): the two crawls did not share the host's pace", short, smallest)
	}
}
