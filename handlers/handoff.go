package handlers

import (
	"container/list"
	"slices"
	"sync"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// DefaultHandoffBytes is the default bound of a process's response hand-off
// (Options.HandoffBytes): about 150 responses of 25 KB.
const DefaultHandoffBytes = 4 << 20

// handoff passes fetched responses from a process's fetch stage to its own parse stage,
// which then need not decode the entry it reads: the fetch stage puts the response it
// published under the message UUID it gave the entry; the parse stage, reading that
// entry from Redis as always (same reads, same acks), takes the response when the UUID
// is there and decodes the entry otherwise (another process fetched it, the process
// restarted, the entry was reclaimed or replayed, or it left the hand-off). The entry
// in Redis stays the truth: the hand-off is a cache of its decoding, lost with the
// process and nothing else.
//
// It holds at most max bytes (wire.Size); the oldest go first. A response is
// taken once: a second delivery of the same entry decodes it.
type handoff struct {
	max int64

	mu      sync.Mutex
	byID    map[string]*list.Element // of *handoffEntry
	order   list.List                // oldest first
	bytes   int64
	peak    int64 // the most bytes held at once
	evicted int64 // responses that went out unread
}

// handoffEntry is one response in the hand-off.
type handoffEntry struct {
	id   string
	res  *spiders.Response
	size int64
}

// newHandoff returns a hand-off of at most max bytes.
func newHandoff(max int64) *handoff {
	return &handoff{max: max, byID: map[string]*list.Element{}}
}

// put keeps res under id, making room by dropping the oldest responses; one larger than
// the whole bound is not kept. It reports whether res was kept and how many responses
// went out for it. res must not change once put. Safe on a nil hand-off (keeps nothing).
func (h *handoff) put(id string, res *spiders.Response) (kept bool, evicted int) {
	if h == nil {
		return false, 0
	}
	size := wire.Size(res)
	if size > h.max {
		return false, 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.byID[id]; ok { // the same id again (never from one fetch stage)
		h.remove(el)
	}
	for h.bytes+size > h.max {
		h.remove(h.order.Front())
		evicted++
	}
	h.byID[id] = h.order.PushBack(&handoffEntry{id: id, res: res, size: size})
	h.bytes += size
	h.peak = max(h.peak, h.bytes)
	h.evicted += int64(evicted)
	return true, evicted
}

// take returns the response kept under id and forgets it; ok is false when there is
// none. Safe on a nil hand-off.
func (h *handoff) take(id string) (res *spiders.Response, ok bool) {
	if h == nil {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	el, ok := h.byID[id]
	if !ok {
		return nil, false
	}
	h.remove(el)
	return el.Value.(*handoffEntry).res, true
}

// remove drops el; the caller holds mu.
func (h *handoff) remove(el *list.Element) {
	e := h.order.Remove(el).(*handoffEntry)
	delete(h.byID, e.id)
	h.bytes -= e.size
}

// usage returns the responses and bytes held now, the most bytes held at once and the
// responses that went out unread.
func (h *handoff) usage() (n int, bytes, peak, evicted int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.order.Len(), h.bytes, h.peak, h.evicted
}

// handoffFor returns the hand-off of a process running stages with the bound b
// (Options.HandoffBytes), or nil: one only where the fetch and parse stages run
// together and b is not negative.
func handoffFor(stages []string, b int64) *handoff {
	if b < 0 || !slices.Contains(stages, streams.StageFetch) || !slices.Contains(stages, streams.StageParse) {
		return nil
	}
	if b == 0 {
		b = DefaultHandoffBytes
	}
	return newHandoff(b)
}
