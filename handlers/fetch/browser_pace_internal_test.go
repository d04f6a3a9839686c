package fetch

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// TestSubrequestsPacedAndCapped asks a page's Request hook for 8 concurrent requests
// to another host (delay 100 ms, each request lasting 30 ms): they go one at a time,
// each starting at least 100 ms after the previous one ended; requests to the page's
// own host are not paced; the 13th request of the page is refused (cap 12; the one
// that waited in vain counts too).
func TestSubrequestsPacedAndCapped(t *testing.T) {
	s := spiders.Settings{PerHostDelay: 100 * time.Millisecond, RenderMaxRequests: 12}
	s.SetDefaults()
	b := newBrowserFetch(&shared{settings: s, log: zap.NewNop()}, Config{})
	ask := b.subrequests(&spiders.Request{URL: "http://page.example/"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	type span struct{ start, end time.Time }
	var mu sync.Mutex
	var spans []span
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			over, err := ask(ctx, "cdn.example:80")
			if err != nil {
				t.Error(err)
				return
			}
			st := time.Now()
			time.Sleep(30 * time.Millisecond)
			en := time.Now()
			over()
			mu.Lock()
			spans = append(spans, span{st, en})
			mu.Unlock()
		}()
	}
	wg.Wait()
	sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
	for i := 1; i < len(spans); i++ {
		if gap := spans[i].start.Sub(spans[i-1].end); gap < 100*time.Millisecond {
			t.Errorf("request %d started %s after request %d ended, want at least 100ms", i+1, gap, i)
		}
	}
	// While a request to the other host is in flight, another one waits (a context
	// already done ends its wait), and the page's own host is not waited for at all:
	// requests 11 and 12 pass with that context.
	held, err := ask(ctx, "cdn.example:80")
	if err != nil {
		t.Fatal(err)
	}
	done, stop := context.WithCancel(ctx)
	stop()
	if _, err := ask(done, "cdn.example:80"); !errors.Is(err, context.Canceled) {
		t.Errorf("a second request to the other host while one is in flight: %v, want it to wait", err)
	}
	for i := 0; i < 2; i++ {
		over, err := ask(done, "page.example:80")
		if err != nil {
			t.Fatalf("own host request %d: %v", i+11, err)
		}
		over()
	}
	held()
	if _, err := ask(ctx, "page.example:80"); !errors.Is(err, errRequestCap) {
		t.Errorf("request 13 of a page capped at 12: %v, want errRequestCap", err)
	}
}
