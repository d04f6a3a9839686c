package handlers

import (
	"context"
	"fmt"
	"sync"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// Versioned items (spiders.Settings.ItemVersioned): the parse stage reads the records
// of a page's item keys, drops the items whose values the record already holds
// (items_unchanged), gives the others the next _version and their _changed fields, and
// the emit script appends each with its new record if the record is still the one read
// (frontier.ItemOut.Record). An item refused because another page emitted its key
// meanwhile (frontier.Emitted.Stale) is made again from the record then stored.

// maxVersionTries bounds how many times a page remakes its items' versions when other
// pages keep emitting the same keys; past it the page fails and comes again.
const maxVersionTries = 8

// pendingItem is a versioned item of a page and its key fingerprint.
type pendingItem struct {
	it  *spiders.Item
	key []byte
}

// versions makes the outs of the versioned items pend (see above); unchanged counts
// those whose key's record holds their values already.
func (p *parser) versions(ctx context.Context, res *spiders.Response, part int, pend []pendingItem) (outs []frontier.ItemOut, kept []pendingItem, unchanged int, err error) {
	keys := make([][]byte, len(pend))
	for i, pi := range pend {
		keys[i] = pi.key
	}
	olds, err := p.frontier.ItemRecords(ctx, part, keys)
	if err != nil {
		return nil, nil, 0, err
	}
	maxItem := p.maxItem()
	volatile := p.spider.Settings.Revisit.Volatile
	// A page back from gone (its consumers got its tombstone) gives its items as new
	// versions even when their values are those of the last.
	back := res.Request != nil && readRevisitState(res.Request.Meta).gone > 0
	for i, pi := range pend {
		old, err := spiders.ParseItemRecord(olds[i])
		if err != nil {
			old = spiders.ItemRecord{} // unreadable: this version starts again at 1
		}
		// Volatile fields make no version: the record leaves them out.
		versioned := *pi.it
		versioned.Fields = stable(pi.it.Fields, volatile)
		rec, err := spiders.NewItemRecord(&versioned, old.Version+1)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%w: handlers: item from %s: %w", streams.ErrPoison, spiders.RedactedURL(res.URL), err)
		}
		rec.Names(p.names.add)
		if old.Version > 0 && rec.Same(old) && !back {
			unchanged++
			continue
		}
		pi.it.Version, pi.it.Changed = rec.Version, nil
		if old.Version > 0 {
			pi.it.Changed = rec.Changed(old, p.names.get)
		}
		payload, err := spiders.MarshalItem(pi.it)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("%w: handlers: item from %s: %w", streams.ErrPoison, spiders.RedactedURL(res.URL), err)
		}
		if len(payload) > maxItem {
			p.count("items_dropped_too_large", 1)
			continue
		}
		outs = append(outs, frontier.ItemOut{Key: pi.key, Payload: payload, Record: rec.Bytes(), Expect: olds[i]})
		kept = append(kept, pi)
	}
	return outs, kept, unchanged, nil
}

// emitVersions sends the page's versioned items, making again those another page's
// version overtook (at most maxVersionTries times), and adds what it did to e.
func (p *parser) emitVersions(ctx context.Context, res *spiders.Response, part int, pend []pendingItem, e *frontier.Emitted) error {
	for try := 0; len(pend) > 0; try++ {
		if try == maxVersionTries {
			return fmt.Errorf("handlers: items of %s: %d keys emitted by other pages %d times in a row", spiders.RedactedURL(res.URL), len(pend), try)
		}
		outs, kept, unchanged, err := p.versions(ctx, res, part, pend)
		if err != nil {
			return err
		}
		e.UnchangedItems += unchanged
		if len(outs) == 0 {
			return nil
		}
		got, err := p.frontier.Emit(ctx, part, nil, outs)
		if err != nil {
			return fmt.Errorf("handlers: output of %s: %w", spiders.RedactedURL(res.URL), err)
		}
		e.Items += got.Items
		e.DuplicateItems += got.DuplicateItems
		e.UnchangedItems += got.UnchangedItems
		pend = pend[:0:0]
		for _, i := range got.Stale {
			pend = append(pend, kept[i])
		}
	}
	return nil
}

// fieldNames remembers the names of the item fields the stage has seen, by their
// hashes in item records, so that _changed can name a field a new version lacks. It
// holds at most maxFieldNames (spiders with endless field names name the rest by
// hash).
type fieldNames struct {
	mu    sync.Mutex
	names map[uint32]string
}

const maxFieldNames = 4096

func (n *fieldNames) add(hash uint32, name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.names == nil {
		n.names = map[uint32]string{}
	}
	if _, ok := n.names[hash]; !ok && len(n.names) < maxFieldNames {
		n.names[hash] = name
	}
}

func (n *fieldNames) get(hash uint32) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	name, ok := n.names[hash]
	return name, ok
}
