package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// stopsEarly is a background component that stops with err after a moment, as a
// dispatcher whose loop gave up would.
type stopsEarly struct{ err error }

func (s stopsEarly) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(50 * time.Millisecond):
		return s.err
	}
}

// TestABackgroundComponentThatStopsEndsTheRun: all three stages run on a real Redis
// against a slow site; a background component stops with an error while the crawl is
// under way. The run ends with that error, the crawl not done. The error was discarded
// (`_ = c.Run(runCtx)`): the crawl went on, and ended "done", without the component.
func TestABackgroundComponentThatStopsEndsTheRun(t *testing.T) {
	t.Parallel()
	const pages = 40
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		w.Header().Set("Content-Type", "text/html")
		var i int
		fmt.Sscanf(r.URL.Path, "/%d", &i)
		if i+1 < pages {
			fmt.Fprintf(w, `<a href="/%d">next</a>`, i+1)
		}
	}))
	defer site.Close()
	srv := streamstest.Start(t)
	sp := &spiders.Spider{Name: "bgstop", StartURLs: []string{site.URL + "/0"},
		Settings: spiders.Settings{AllowNetworks: []string{"127.0.0.1/32"}, Concurrency: 1}}
	sp.Handle("parse", func(_ context.Context, res *spiders.Response, out *spiders.Output) error {
		for _, l := range res.Links("a[href]") {
			req, err := res.Follow(l, "parse")
			if err != nil {
				return err
			}
			out.Follow(req)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := Seed(ctx, srv.Client(), sp, nil); err != nil {
		t.Fatal(err)
	}
	r, err := newRun(ctx, runConfig{Client: srv.Client(), Spider: sp, UntilDone: true, Options: Options{Consumer: "test",
		Stages: []string{streams.StageFetch, streams.StageParse}, Logger: zaptest.NewLogger(t)}})
	defer r.close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stopped := errors.New("dispatcher gave up")
	r.background = append(r.background, stopsEarly{err: stopped})
	if err := r.serve(ctx); !errors.Is(err, stopped) {
		t.Fatalf("run = %v; want it ended by the component's error", err)
	}
	p, err := inspect.ReadProgress(ctx, srv.Client(), r.layout)
	if err != nil {
		t.Fatal(err)
	}
	if p.Done() {
		t.Fatalf("the crawl of %d pages of 50 ms each is done: the component did not stop the run", pages)
	}
}
