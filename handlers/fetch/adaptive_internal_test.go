package fetch

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestAutoDecisions runs render: auto's decisions on a real Redis: a type whose
// samples all agree goes over HTTP after AutoSamples of them, one sample that differs
// sends a type to the browser at once, and a check that differs after an HTTP decision
// sends it back to the browser; every fetch process reads the same decisions (each
// read here by a new one: a process trusts what it read for a second).
func TestAutoDecisions(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	l := streams.NewLayout("autotest", 1)
	newA := func() *adaptive {
		f := &Fetcher{shared: &shared{log: zap.NewNop()}}
		return newAdaptive(f, Config{Client: rdb, Layout: l, AutoSamples: 3})
	}
	a := newA()
	for i := 0; i < 2; i++ {
		a.record(ctx, "static", true, false)
	}
	if m, _ := newA().mode(ctx, "static"); m != "" {
		t.Fatalf("after 2 agreeing samples of 3: %q, want still learning", m)
	}
	a.record(ctx, "static", true, false)
	if m, _ := newA().mode(ctx, "static"); m != autoHTTP {
		t.Fatalf("after 3 agreeing samples: %q, want http", m)
	}
	a.record(ctx, "js", true, false)
	a.record(ctx, "js", false, false)
	if m, _ := newA().mode(ctx, "js"); m != autoBrowser {
		t.Fatalf("after a sample that differs: %q, want browser", m)
	}
	a.record(ctx, "js", true, false) // late samples do not undo a browser decision
	a.record(ctx, "js", true, false)
	a.record(ctx, "static", true, true) // a check that agrees changes nothing
	if m, _ := newA().mode(ctx, "static"); m != autoHTTP {
		t.Fatalf("after an agreeing check: %q, want http", m)
	}
	a.record(ctx, "static", false, true)
	if m, _ := newA().mode(ctx, "static"); m != autoBrowser {
		t.Fatalf("after a check that differs: %q, want browser", m)
	}
	h := rdb.HGetAll(ctx, l.Global.Render).Val()
	for f, want := range map[string]string{"static|samples": "3", "static|same": "3", "static|checks": "2", "static|diverged": "1",
		"js|samples": "4", "js|same": "3", "js|mode": "browser"} {
		if h[f] != want {
			t.Errorf("%s = %q, want %q (all: %v)", f, h[f], want, h)
		}
	}
}

// TestOutputKeys: two outputs are the same when they yield the same items (type and
// fields, whatever their order or page URL) and the same links.
func TestOutputKeys(t *testing.T) {
	a := &spiders.Output{Items: []spiders.Item{spiders.NewItem("p", map[string]any{"a": "1", "b": "2"})},
		Requests: []*spiders.Request{{URL: "http://x/1"}, {URL: "http://x/2"}}}
	b := &spiders.Output{Items: []spiders.Item{{Type: "p", Fields: map[string]any{"b": "2", "a": "1"}, URL: "http://other/"}},
		Requests: []*spiders.Request{{URL: "http://x/2"}, {URL: "http://x/1"}, {URL: "http://x/1"}}}
	if ka, kb := outputKeys(a), outputKeys(b); len(ka) != 3 || !slices.Equal(ka, kb) {
		t.Errorf("%v != %v", ka, kb)
	}
	b.Requests = b.Requests[:1]
	if slices.Equal(outputKeys(a), outputKeys(b)) {
		t.Error("a missing link: same")
	}
}

// TestAutoSamplesWaitForOneToEnd: while a learning type has autoSamplesInFlight of its
// pages sampled in this process, the next page of that type waits; the end of a sample
// lets exactly one waiter become the next sample, and a waiter whose context ends
// returns its error.
func TestAutoSamplesWaitForOneToEnd(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	f := &Fetcher{shared: &shared{log: zap.NewNop()}}
	a := newAdaptive(f, Config{Client: rdb, Layout: streams.NewLayout("autowait", 1), AutoSamples: 3})
	req := &spiders.Request{URL: "http://shop.test/p/1", PageType: "product"}
	for i := range autoSamplesInFlight {
		rt, err := a.tripFor(ctx, req)
		if _, ok := rt.(autoSample); !ok || err != nil {
			t.Fatalf("page %d: %T, %v; want a sample", i, rt, err)
		}
	}
	got := make(chan roundTripper, 2)
	for range 2 {
		go func() {
			rt, err := a.tripFor(ctx, req)
			if err != nil {
				t.Error(err)
			}
			got <- rt
		}()
	}
	select {
	case rt := <-got:
		t.Fatalf("a page of a type with %d samples in flight went on (%T) before one ended", autoSamplesInFlight, rt)
	case <-time.After(100 * time.Millisecond):
	}
	a.sampled("product")
	if rt := <-got; rt == nil {
		t.Fatal("the waiter that went on after a sample ended has no round trip")
	} else if _, ok := rt.(autoSample); !ok {
		t.Fatalf("the waiter went on as %T, want a sample", rt)
	}
	select {
	case rt := <-got:
		t.Fatalf("two waiters went on (%T) for one sample that ended", rt)
	case <-time.After(100 * time.Millisecond):
	}
	a.sampled("product") // the last waiter takes this slot
	<-got
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := a.tripFor(cctx, req)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended: %v, want context.Canceled", err)
	}
}
