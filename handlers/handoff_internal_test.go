package handlers

import (
	"fmt"
	"testing"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

func handoffResponse(body int) *spiders.Response {
	return &spiders.Response{Request: &spiders.Request{URL: "http://a/"}, URL: "http://a/", Body: make([]byte, body)}
}

// The hand-off never holds more than its bound: the oldest responses go first (counted),
// one larger than the bound is not kept, a response is taken once.
func TestHandoffBound(t *testing.T) {
	t.Parallel()
	size := wire.Size(handoffResponse(1000))
	h := newHandoff(10 * size)
	evicted := 0
	for i := range 100 {
		kept, ev := h.put(fmt.Sprint(i), handoffResponse(1000))
		if !kept {
			t.Fatalf("response %d not kept", i)
		}
		evicted += ev
		if n, b, _, _ := h.usage(); b > 10*size || int64(n)*size != b {
			t.Fatalf("after %d puts: %d responses, %d bytes; bound %d", i+1, n, b, 10*size)
		}
	}
	n, b, peak, ev := h.usage()
	if n != 10 || b != 10*size || peak != 10*size || evicted != 90 || ev != 90 {
		t.Fatalf("%d responses, %d bytes (peak %d), %d evicted (%d by put): want 10, %d, 90", n, b, peak, ev, evicted, 10*size)
	}
	if _, ok := h.take("89"); ok {
		t.Error("response 89 was still there: the oldest go first")
	}
	if res, ok := h.take("95"); !ok || len(res.Body) != 1000 {
		t.Fatalf("response 95: %v, want it", ok)
	}
	if _, ok := h.take("95"); ok {
		t.Error("response 95 taken twice")
	}
	if n, b, _, _ := h.usage(); n != 9 || b != 9*size {
		t.Fatalf("after a take: %d responses, %d bytes; want 9, %d", n, b, 9*size)
	}
	// A response larger than the bound is not kept, and drops nothing.
	if kept, ev := h.put("big", handoffResponse(20*1000)); kept || ev != 0 {
		t.Fatalf("a response over the bound: kept %v, %d evicted", kept, ev)
	}
	// Smaller responses make room by as many of the oldest as needed.
	if kept, ev := h.put("two", handoffResponse(int(2*size)-int(wire.Size(handoffResponse(0))))); !kept || ev != 1 {
		t.Fatalf("a response of two: kept %v, %d evicted; want one out (9 held, bound 10)", kept, ev)
	}
	if n, b, _, _ := h.usage(); n != 9 || b > 10*size {
		t.Fatalf("%d responses, %d bytes; want 9 within %d", n, b, 10*size)
	}
	var none *handoff
	if kept, _ := none.put("x", handoffResponse(1)); kept {
		t.Error("a nil hand-off kept a response")
	}
	if _, ok := none.take("x"); ok {
		t.Error("a nil hand-off gave a response")
	}
}

// Only a process that runs both the fetch and the parse stage has a hand-off.
func TestHandoffOnlyWithFetchAndParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stages []string
		bytes  int64
		want   int64 // its bound; 0: none
	}{
		{[]string{streams.StageFetch, streams.StageParse, streams.StageStore}, 0, DefaultHandoffBytes},
		{[]string{streams.StageParse, streams.StageFetch}, 1 << 20, 1 << 20},
		{[]string{streams.StageFetch, streams.StageParse}, -1, 0},
		{[]string{streams.StageFetch, streams.StageStore}, 0, 0},
		{[]string{streams.StageParse, streams.StageStore}, 0, 0},
	} {
		var got int64 // 0: none
		if h := handoffFor(tc.stages, tc.bytes); h != nil {
			got = h.max
		}
		if got != tc.want {
			t.Errorf("%v, %d: bound %d, want %d (0: no hand-off)", tc.stages, tc.bytes, got, tc.want)
		}
	}
}
