package frontier

import (
	"context"
)

// One emit in three files: Emit (here) splits a page's requests and items into shares,
// one per partition; the frontier's group commit gathers the shares of pages parsed at
// about the same time, and flush (emit_flush.go) runs them as one call of the emit
// script per partition, composed (emit_lua.go) from the crawl's dedup snippet, the
// shared Lua and the host scheduler's functions (hostsched_lua.go).

// Candidate is a request offered to the frontier.
type Candidate struct {
	// Fingerprint identifies the request (see spiders.Fingerprint). Empty means "do not
	// filter": the request is queued even if seen (retries, recrawls).
	Fingerprint []byte
	// Payload is the encoded request (spiders.MarshalRequest). It may be left nil when
	// URL is set.
	Payload []byte
	// URL and Callback, when URL is set, say that the request has no other field than
	// its URL, callback, priority and depth (no method, headers, body, meta, retries):
	// its host's queue then keeps it in a compact form of a few bytes beside its path
	// (entry.go), and the frontier writes its JSON itself when it hands it out.
	URL, Callback string
	// Priority and Depth of the request place it in the frontier (see Config.Order).
	Priority, Depth int
	// Host is the key of the request URL's host (spiders.HostKey); it picks the
	// partition and the host queue.
	Host string
}

// ItemOut is an item a page yields, offered to Emit.
type ItemOut struct {
	// Key is the item's key fingerprint; an item whose key was emitted before is
	// dropped. Empty means "do not filter".
	Key []byte
	// Payload is the encoded item (spiders.MarshalItem).
	Payload []byte
	// Record, when set, versions the item instead of dropping it when its key was
	// emitted before: the encoded spiders.ItemRecord of this version, stored for Key in
	// the partition's item records (Frontier.ItemRecords) in the step that appends the
	// item, if what is stored is still Expect. Needs Key.
	Record []byte
	// Expect is the record read for Key before this version was made (nil: none).
	Expect []byte
}

// Emitted says what Emit queued.
type Emitted struct {
	// Requests were queued; DuplicateRequests were seen before.
	Requests, DuplicateRequests int
	// Items were added to the items stream; DuplicateItems had a key emitted before.
	Items, DuplicateItems int
	// UnchangedItems were versioned items whose key already holds a record of the same
	// values (another page emitted them meanwhile): not added.
	UnchangedItems int
	// Stale lists, by index in the items given, the versioned items not added because
	// the record of their key was no longer their Expect (another page emitted another
	// version meanwhile): the caller reads the record again and makes a new version.
	Stale []int
	// OverLimit counts requests dropped because the crawl reached max_pages.
	OverLimit int
	// OverBudget counts new requests dropped because their host (or domain) spent its
	// budget (Config.Budget).
	OverBudget int
}

// Emit queues the requests not seen before, each in the partition of its host, and
// appends the items whose keys were not emitted before to the items stream of partition
// part (the page's own; 0 in a crawl of one partition), all at the same time. Requests
// known in process to be seen are dropped before Redis. The rest goes to the emit
// queue, which runs one script call per partition for the pages parsed at about the
// same time (see flush); in each, dedup and enqueue are one step, and an item's key is
// recorded in the step that appends it (two pages yielding the same item at the same
// moment add it once; items without a key are always added). A versioned item (Record
// set) is added when its key's record is still its Expect, and its Record stored.
func (f *Frontier) Emit(ctx context.Context, part int, cands []Candidate, items []ItemOut) (Emitted, error) {
	var e Emitted
	var shares []*emitShare
	// share returns the share of partition p that the next request goes in: a page's
	// requests of one partition go in chunks of at most maxEmitChunk, each its own
	// script call, so a page with a huge number of links never blocks Redis for long.
	share := func(p int) *emitShare {
		for i := len(shares) - 1; i >= 0; i-- {
			if s := shares[i]; s.part == p {
				if s.nreqs() < maxEmitChunk {
					return s
				}
				break
			}
		}
		s := &emitShare{part: p}
		shares = append(shares, s)
		return s
	}
	for _, c := range cands {
		if len(c.Fingerprint) > 0 && f.seen != nil && f.seen.has(c.Fingerprint) {
			e.DuplicateRequests++
			continue
		}
		host := c.Host
		p := 0
		if len(f.layout.Parts) > 1 {
			p = f.layout.PartitionOf(host)
		}
		s := share(p)
		var fp, rule string
		if len(c.Fingerprint) > 0 {
			fp = f.fpArg(c.Fingerprint)
		}
		if f.cfg.Rules != nil {
			if r := f.cfg.Rules(host); r != nil {
				rule = r.arg()
			}
		}
		s.reqs = append(s.reqs, fp, f.order.band(c.Priority, c.Depth), entryOf(&c), host, rule)
		s.fps = append(s.fps, c.Fingerprint)
	}
	if len(items) > 0 {
		s := share(part)
		for _, it := range items {
			var recs string
			if len(it.Record) > 0 {
				recs = f.itemRecordsKey(part, it.Key)
			}
			s.items = append(s.items, string(it.Key), string(it.Payload), nextMessageID(), string(it.Record), string(it.Expect), recs)
		}
	}
	var err error
	var queued []*emitShare
	var waits []<-chan struct{}
	for _, s := range shares {
		wait, serr := f.queue.Submit(ctx, s)
		if err = serr; err != nil {
			break
		}
		queued, waits = append(queued, s), append(waits, wait)
	}
	for i, s := range queued {
		<-waits[i]
		if s.err != nil {
			if err == nil {
				err = s.err
			}
			continue
		}
		f.count(&e, s)
		if s.nreqs() > 0 {
			f.wakePart(s.part) // its hosts may be ready now: this process's dispatcher looks there
		}
	}
	return e, err
}

// count adds a share's outcomes to e and remembers its seen fingerprints.
func (f *Frontier) count(e *Emitted, s *emitShare) {
	for i := 0; i < len(s.out); i++ {
		isReq, c := i < s.nreqs(), s.out[i]
		switch {
		case isReq && c == 'q':
			e.Requests++
		case isReq && c == 'o':
			e.OverLimit++
		case isReq && c == 'b':
			e.OverBudget++
		case isReq:
			e.DuplicateRequests++
		case c == 'a':
			e.Items++
		case c == 'u':
			e.UnchangedItems++
		case c == 'r':
			e.Stale = append(e.Stale, i-s.nreqs())
		default:
			e.DuplicateItems++
		}
		if isReq && c != 'o' && f.seen != nil && len(s.fps[i]) > 0 {
			f.seen.add(s.fps[i]) // queued now or seen before: either way it is in the set
		}
	}
}
