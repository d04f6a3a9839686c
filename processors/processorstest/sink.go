package processorstest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// Sink is processors.Sink, declared again here because the tests of package processors
// use this package, which therefore cannot import it. Every processors.Sink is a Sink
// and the other way round: the two have the same methods and the same contract.
type Sink interface {
	// Store returns once it is durable, or already stored under the same key (then
	// stored is false). Safe for concurrent use; concurrent calls may share one write.
	Store(ctx context.Context, it *spiders.Item) (stored bool, err error)
	// Close flushes and releases the sink. Store must not be called after Close.
	Close(ctx context.Context) error
}

// SinkFeatures says what a sink under test does beyond the contract every sink keeps
// (Store durable on return, idempotent by item key, safe for concurrent use, Close
// flushes and returns promptly once its ctx has ended). A case that needs a feature the
// sink lacks is skipped, saying which.
type SinkFeatures struct {
	// Reopen: a sink opened on a target sees what the sinks before it stored there,
	// whether they were closed or abandoned without Close (a crashed worker), so an
	// item delivered again through it (a crash between Store and the ack) is reported
	// as not stored and not written twice. Every built-in sink does; a sink that keeps
	// its keys in memory only does not.
	Reopen bool
	// Versions: the sink keeps versioned items (spiders.Item.Version > 0, see
	// spiders.Settings.ItemVersioned): a newer version of a stored key is stored, the
	// same version again is not, and the last record of a key is its newest version.
	Versions bool
	// OlderVersionsRefused: with Versions, an older version of a key that arrives after
	// a newer one was stored (a version delivered late, for the first time) is not
	// stored either, so the newest version stays the last record of its key whatever
	// the order of delivery. The PostgreSQL sink does; the file sinks (JSONL, CSV)
	// append it, since they remember which versions they wrote, not which was newest.
	OlderVersionsRefused bool
	// RefusesMissingKey: Store returns an error for an item missing key fields
	// (spiders.Item.MissingKey) and stores nothing. Without it the sink stores such an
	// item under the key it has (spiders.Item.Key, with null for the missing fields),
	// so a second item missing the same fields is taken for a duplicate; the built-in
	// sinks do that, since the parse stage makes such items dead letters before they
	// reach a sink.
	RefusesMissingKey bool
}

// Record is one record a target holds, as SinkTarget.ReadBack returns it.
type Record struct {
	// Key is the spiders.Item.Key of the item stored.
	Key string
	// Version is its spiders.Item.Version; 0 for an item that is not versioned.
	Version int
	// Type and URL are its spiders.Item.Type and URL.
	Type, URL string
	// Fields are its fields. The suite's items have string values only, and it
	// compares them with fmt.Sprint, so a target may give back any type that prints
	// the same; extra fields (such as empty cells of columns an item lacks) are ignored.
	Fields map[string]any
}

// SinkTarget is where the sinks of one subtest store: a file, a table, a bucket.
type SinkTarget struct {
	// Open opens a sink on the target; the suite closes it. A subtest may open more
	// than one (SinkFeatures.Reopen), the later while an earlier one is still open but
	// no longer used, as after a crash.
	Open func(t *testing.T) Sink
	// ReadBack returns the records the target holds now, read from outside the sinks
	// (one may be open): all of them, the records of a key in the order they were
	// written. A target that keeps one record per key returns that one.
	ReadBack func(t *testing.T) []Record
}

// closeTimeout bounds a Close with a live ctx; Close with an ended ctx must return
// within promptly.
const (
	closeTimeout = 30 * time.Second
	promptly     = 5 * time.Second
)

// TestSink runs the contract of processors.Sink as subtests of t against the sinks of
// newTarget, which it calls once per subtest for a new, empty target (its own file,
// table, ...). The subtests run one after the other:
//
//   - StoreOnce: an item is stored (stored=true) and read back with its key, type,
//     URL and fields before the sink is closed: Store returns once it is durable.
//   - StoreAgain: the same key again, even with other fields, is not stored
//     (stored=false) and the target still holds its first record only.
//   - ConcurrentDuplicates: 64 goroutines store 50 items each, every key twice, from
//     two goroutines at once: each key is stored (stored=true) by exactly one call and
//     read back exactly once.
//   - CloseFlushes: items stored from 16 goroutines, then Close: it returns nil and
//     every item is read back.
//   - CloseEndedContext: Close with a ctx already ended returns within 5 s (with an
//     error or not), and what was stored before is read back.
//   - MissingKey: an item lacking its key fields is refused (RefusesMissingKey) or
//     stored under its key as it is, a second one like it then not stored.
//   - RedeliveryAfterCrash (Reopen): items stored, then, without Close, a second sink
//     opened on the target: the items stored again through it are not stored (the
//     redelivery of items whose ack was lost), a new one is, each key read back once.
//   - ReopenAfterClose (Reopen): the same after a Close.
//   - Versions (Versions): versions 1 and 2 of a key are stored, 1 and 2 again not,
//     and the last record of the key is version 2 with its fields; with Reopen, a
//     second sink opened without Close does not store 1 or 2 again but stores 3.
//   - OlderVersionLate (OlderVersionsRefused): version 3 stored, then version 2 for
//     the first time: not stored, the key's last record stays version 3.
//   - ConcurrentVersions (OlderVersionsRefused): versions 1 to 8 of a key stored at
//     once, each twice: no version is stored twice, version 8 is stored and is the
//     key's last record.
func TestSink(t *testing.T, features SinkFeatures, newTarget func(t *testing.T) SinkTarget) {
	t.Helper()
	for _, c := range sinkCases {
		t.Run(c.name, func(t *testing.T) {
			if c.needs != nil {
				if missing := c.needs(features); missing != "" {
					t.Skipf("the sink does not declare SinkFeatures.%s", missing)
				}
			}
			c.run(t, &suite{features: features, target: newTarget(t)})
		})
	}
}

// sinkCase is one subtest of TestSink; needs names the feature it requires and the
// sink lacks ("" when it has them).
type sinkCase struct {
	name  string
	needs func(SinkFeatures) string
	run   func(t *testing.T, s *suite)
}

// suite is the state of one subtest: the target and the sinks opened on it.
type suite struct {
	features SinkFeatures
	target   SinkTarget
}

// open opens a sink on the target, closed when the subtest ends unless the subtest
// closed it.
func (s *suite) open(t *testing.T) *openSink {
	t.Helper()
	sink := s.target.Open(t)
	if sink == nil {
		t.Fatal("processorstest: SinkTarget.Open returned a nil sink")
	}
	o := &openSink{Sink: sink}
	t.Cleanup(func() {
		if !o.closed {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), closeTimeout)
			defer cancel()
			_ = o.Close(ctx)
		}
	})
	return o
}

// openSink is a sink the suite opened; closed tells whether the suite closed it.
type openSink struct {
	Sink
	closed bool
}

// close closes the sink under closeTimeout and fails t on an error.
func (o *openSink) close(t *testing.T) {
	t.Helper()
	o.closed = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), closeTimeout)
	defer cancel()
	if err := o.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// store stores it and returns stored, failing t on an error.
func (o *openSink) store(t *testing.T, it *spiders.Item) bool {
	t.Helper()
	stored, err := o.Store(t.Context(), it)
	if err != nil {
		t.Fatalf("store %s (version %d): %v", it.Key(), it.Version, err)
	}
	return stored
}

// mustStore stores it and fails t unless stored is want.
func (o *openSink) mustStore(t *testing.T, it *spiders.Item, want bool) {
	t.Helper()
	if got := o.store(t, it); got != want {
		t.Fatalf("store %s (version %d): stored=%v, want %v", it.Key(), it.Version, got, want)
	}
}

// storeAll stores items from workers goroutines at once (worker w makes calls w,
// w+workers, ...) and returns, by key (and version), how many calls reported stored;
// errors fail t.
func (o *openSink) storeAll(t *testing.T, workers int, items []*spiders.Item) map[string]int {
	t.Helper()
	var mu sync.Mutex
	stored := map[string]int{}
	var errs []string
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(items); i += workers {
				ok, err := o.Store(t.Context(), items[i])
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Sprintf("store %s: %v", windowKey(items[i]), err))
				} else if ok {
					stored[windowKey(items[i])]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Errorf("%d of %d Store calls failed: %s", len(errs), len(items), firstFew(errs))
	}
	return stored
}

// firstFew joins the first five of list, saying how many more there are.
func firstFew(list []string) string {
	const few = 5
	if len(list) <= few {
		return strings.Join(list, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(list[:few], "; "), len(list)-few)
}

// windowKey names an item and its version.
func windowKey(it *spiders.Item) string {
	if it.Version > 0 {
		return fmt.Sprintf("%s@%d", it.Key(), it.Version)
	}
	return it.Key()
}

// readBack returns the target's records by key, failing t on a record without a key.
func (s *suite) readBack(t *testing.T) map[string][]Record {
	t.Helper()
	byKey := map[string][]Record{}
	for _, r := range s.target.ReadBack(t) {
		if r.Key == "" {
			t.Fatalf("the target holds a record without a key: %+v", r)
		}
		byKey[r.Key] = append(byKey[r.Key], r)
	}
	return byKey
}

// wantOnce fails t unless the target holds exactly the items given (their keys, each
// once, with their fields), and no other key.
func (s *suite) wantOnce(t *testing.T, items ...*spiders.Item) {
	t.Helper()
	byKey := s.readBack(t)
	want := map[string]bool{}
	var wrong []string
	for _, it := range items {
		key := it.Key()
		want[key] = true
		switch recs := byKey[key]; len(recs) {
		case 0:
			wrong = append(wrong, fmt.Sprintf("item %s not read back", key))
		case 1:
			if diff := recordDiff(it, recs[0]); diff != "" {
				wrong = append(wrong, fmt.Sprintf("item %s read back wrong (-want +got):\n%s", key, diff))
			}
		default:
			wrong = append(wrong, fmt.Sprintf("item %s read back %d times, want once", key, len(recs)))
		}
	}
	for key, recs := range byKey {
		if !want[key] {
			wrong = append(wrong, fmt.Sprintf("the target holds %d record(s) of %s, which the subtest did not store", len(recs), key))
		}
	}
	if len(wrong) > 0 {
		t.Errorf("the target does not hold the %d items stored, each once: %s", len(items), firstFew(wrong))
	}
}

// recordDiff compares the record read back for it with it: "" when they match, else
// the lines that differ as -want +got.
func recordDiff(it *spiders.Item, r Record) string {
	var diff string
	add := func(name string, want, got any) {
		if w, g := fmt.Sprint(want), fmt.Sprint(got); w != g {
			diff += fmt.Sprintf("  %s:\n  -%q\n  +%q\n", name, w, g)
		}
	}
	add("Key", it.Key(), r.Key)
	add("Version", it.Version, r.Version)
	add("Type", it.Type, r.Type)
	add("URL", it.URL, r.URL)
	for _, name := range it.FieldNames() {
		got, ok := r.Fields[name]
		if !ok {
			got = "<missing>"
		}
		add("Fields["+name+"]", it.Fields[name], got)
	}
	return diff
}

// crawled is the crawl time of the suite's items.
var crawled = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// item returns the suite's item i: a "product" keyed by its url field, with string
// fields url, name and price. Every item has the same field names, so a sink that
// fixes its columns from the first item (CSV) has one for each.
func item(i int) *spiders.Item {
	url := fmt.Sprintf("http://sink.test/p/%d", i)
	it := spiders.NewItem("product", map[string]any{"url": url, "name": fmt.Sprintf("product %d", i), "price": fmt.Sprintf("%d.00", i)})
	it.URL, it.CrawledAt = url, crawled
	return &it
}

// items returns items first to last.
func items(first, last int) []*spiders.Item {
	var out []*spiders.Item
	for i := first; i <= last; i++ {
		out = append(out, item(i))
	}
	return out
}

// version returns item i at version v, its price set by the version.
func version(i, v int) *spiders.Item {
	it := item(i)
	it.Version = v
	it.Fields["price"] = fmt.Sprintf("%d.%02d", i, v)
	if v > 1 {
		it.Changed = []string{"price"}
	}
	return it
}
