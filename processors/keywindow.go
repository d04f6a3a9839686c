package processors

import (
	"math/bits"
	"strconv"
)

// windowKey is what a file sink's key window holds for an item: its key, and for a
// versioned item (spiders.Item.Version) its version too, so that a newer version of a
// key already written is appended while the same version delivered again is skipped.
func windowKey(key string, version int) string {
	if version <= 0 {
		return key
	}
	return key + "\x00" + strconv.Itoa(version)
}

// keyWindowSize is how many of the last item keys written a file sink (JSONL, CSV)
// remembers to skip a redelivered item: 131,072 keys, 3 MB, allocated at open.
//
// Why the last keys are enough: with dedup_items (the default) the crawl appends an
// item key to the items stream once (its parse-stage dedup in Redis), and the store
// stage acks an item's entry only after the sink fsynced it. So a key comes to a sink
// again only as the same entry delivered again: one written but not acked when its
// worker died (or whose ack was lost), claimed by a live consumer once it has been
// idle for the claim time (60 s by default). What the sink wrote since is the items of
// that minute or so; at 1,000 items/s the window covers twice that. A file reopened
// after a crash indexes its last keyWindowSize records, which end with the
// unacked ones.
const keyWindowSize = 1 << 17

// keyWindow is an exact set of the last n 64-bit key hashes added: a ring of them in
// the order added (the oldest falls out when it is full) and an open-addressing table
// (linear probing, 0 an empty slot, at most half full) to find them. Its memory is
// fixed at 24 bytes a key; it holds no pointers for the GC to scan. Not safe for
// concurrent use (the file's writer owns it).
type keyWindow struct {
	ring  []uint64 // the hashes in the order added; ring[next] is the oldest when full
	next  int
	full  bool
	table []uint64
	mask  uint64
}

// newKeyWindow returns an empty window of n keys (at least 1).
func newKeyWindow(n int) *keyWindow {
	n = max(n, 1)
	slots := uint64(1) << bits.Len64(uint64(2*n-1)) // a power of two >= 2n
	return &keyWindow{ring: make([]uint64, n), table: make([]uint64, slots), mask: slots - 1}
}

// nonZero maps h to a non-zero hash (0 marks an empty slot).
func nonZero(h uint64) uint64 { return max(h, 1) }

// find returns the slot holding h, or the empty slot where its probe ends.
func (w *keyWindow) find(h uint64) (uint64, bool) {
	for i := h & w.mask; ; i = (i + 1) & w.mask {
		switch w.table[i] {
		case h:
			return i, true
		case 0:
			return i, false
		}
	}
}

// has reports whether h is among the last n hashes added.
func (w *keyWindow) has(h uint64) bool {
	_, ok := w.find(nonZero(h))
	return ok
}

// add records h as the newest (nothing when it is in the window already); the oldest
// falls out of a full window.
func (w *keyWindow) add(h uint64) {
	h = nonZero(h)
	i, ok := w.find(h)
	if ok {
		return
	}
	if w.full {
		w.remove(w.ring[w.next])
		i, _ = w.find(h) // the removal may have moved entries
	}
	w.table[i] = h
	w.ring[w.next] = h
	if w.next++; w.next == len(w.ring) {
		w.next, w.full = 0, true
	}
}

// remove deletes h from the table, shifting back the entries after it that probed past
// its slot so that every probe still ends at its key.
func (w *keyWindow) remove(h uint64) {
	i, ok := w.find(h)
	if !ok {
		return
	}
	for j := (i + 1) & w.mask; w.table[j] != 0; j = (j + 1) & w.mask {
		home := w.table[j] & w.mask
		// the entry at j stays when its home is cyclically in (i, j]
		if (i < j && i < home && home <= j) || (j < i && (home > i || home <= j)) {
			continue
		}
		w.table[i] = w.table[j]
		i = j
	}
	w.table[i] = 0
}
