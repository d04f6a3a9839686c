package processorstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// needReopen, needVersions and needOlderRefused name the feature a case needs when
// the sink lacks it.
func needReopen(f SinkFeatures) string { return missingFeature(!f.Reopen, "Reopen") }

func needVersions(f SinkFeatures) string { return missingFeature(!f.Versions, "Versions") }

func needOlderRefused(f SinkFeatures) string {
	if m := needVersions(f); m != "" {
		return m
	}
	return missingFeature(!f.OlderVersionsRefused, "OlderVersionsRefused")
}

func missingFeature(missing bool, name string) string {
	if missing {
		return name
	}
	return ""
}

// sinkCases are the subtests of TestSink, in the order they run (see its doc).
var sinkCases = []sinkCase{
	{name: "StoreOnce", run: storeOnce},
	{name: "StoreAgain", run: storeAgain},
	{name: "ConcurrentDuplicates", run: concurrentDuplicates},
	{name: "CloseFlushes", run: closeFlushes},
	{name: "CloseEndedContext", run: closeEndedContext},
	{name: "MissingKey", run: missingKey},
	{name: "RedeliveryAfterCrash", needs: needReopen, run: redeliveryAfterCrash},
	{name: "ReopenAfterClose", needs: needReopen, run: reopenAfterClose},
	{name: "Versions", needs: needVersions, run: versions},
	{name: "OlderVersionLate", needs: needOlderRefused, run: olderVersionLate},
	{name: "ConcurrentVersions", needs: needOlderRefused, run: concurrentVersions},
}

func storeOnce(t *testing.T, s *suite) {
	sink := s.open(t)
	it := item(1)
	sink.mustStore(t, it, true)
	s.wantOnce(t, it) // before Close: Store returned, so it is durable
	sink.close(t)
	s.wantOnce(t, it)
}

func storeAgain(t *testing.T, s *suite) {
	sink := s.open(t)
	first := item(1)
	sink.mustStore(t, first, true)
	sink.mustStore(t, item(1), false)
	changed := item(1)
	changed.Fields["name"] = "another name"
	sink.mustStore(t, changed, false) // the same key: the first record stays
	s.wantOnce(t, first)
	sink.close(t)
	s.wantOnce(t, first)
}

func concurrentDuplicates(t *testing.T, s *suite) {
	const workers, perWorker = 64, 50
	const keys = workers * perWorker / 2
	sink := s.open(t)
	// Workers 2m and 2m+1 store the same keys, in the same order, at once (storeAll
	// gives call i to worker i%workers).
	calls := make([]*spiders.Item, 0, workers*perWorker)
	for i := range workers * perWorker {
		calls = append(calls, item(1+i/2))
	}
	stored := sink.storeAll(t, workers, calls)
	var wrong []string
	for _, it := range items(1, keys) {
		if n := stored[it.Key()]; n != 1 {
			wrong = append(wrong, fmt.Sprintf("%s by %d", it.Key(), n))
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%d of %d keys were reported stored by other than 1 of their 2 Store calls: %s", len(wrong), keys, firstFew(wrong))
	}
	s.wantOnce(t, items(1, keys)...)
	sink.close(t)
}

func closeFlushes(t *testing.T, s *suite) {
	sink := s.open(t)
	all := items(1, 200)
	stored := sink.storeAll(t, 16, all)
	if len(stored) != len(all) {
		t.Errorf("%d of %d new items reported stored", len(stored), len(all))
	}
	sink.close(t)
	s.wantOnce(t, all...)
}

func closeEndedContext(t *testing.T, s *suite) {
	sink := s.open(t)
	all := items(1, 10)
	sink.storeAll(t, 4, all)
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	cancel()
	sink.closed = true
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- sink.Close(ctx) }()
	select {
	case err := <-done:
		t.Logf("close with an ended ctx: %v after %v", err, time.Since(start).Round(time.Millisecond))
	case <-time.After(promptly):
		t.Fatalf("close with an ended ctx has not returned after %v", promptly)
	}
	s.wantOnce(t, all...)
}

// noKey returns item i keyed by a sku field it lacks.
func noKey(i int) *spiders.Item {
	it := item(i)
	it.KeyFields = []string{"sku"}
	return it
}

func missingKey(t *testing.T, s *suite) {
	sink := s.open(t)
	it := noKey(1)
	if len(it.MissingKey()) == 0 {
		t.Fatal("processorstest: the item missing its key is not (spiders.Item.MissingKey changed?)")
	}
	stored, err := sink.Store(t.Context(), it)
	if s.features.RefusesMissingKey {
		if err == nil {
			t.Fatalf("an item missing its key fields: stored=%v and no error, want an error (SinkFeatures.RefusesMissingKey)", stored)
		}
		sink.close(t)
		s.wantOnce(t)
		return
	}
	if err != nil || !stored {
		t.Fatalf("an item missing its key fields: stored=%v, %v; want it stored under its key %s (set SinkFeatures.RefusesMissingKey if the sink refuses it)", stored, err, it.Key())
	}
	sink.mustStore(t, noKey(2), false) // keyed alike: taken for a duplicate
	sink.close(t)
	s.wantOnce(t, it)
}

func redeliveryAfterCrash(t *testing.T, s *suite) {
	crashed := s.open(t)
	sent := items(1, 20)
	if stored := crashed.storeAll(t, 8, sent); len(stored) != len(sent) {
		t.Fatalf("%d of %d new items reported stored", len(stored), len(sent))
	}
	s.wantOnce(t, sent...) // durable on return: no Close
	// The worker dies (no Close) before its acks reach Redis; a new one gets the items
	// again, all at once.
	sink := s.open(t)
	if stored := sink.storeAll(t, 8, sent); len(stored) != 0 {
		t.Errorf("after a reopen, %d of %d items delivered again were stored again", len(stored), len(sent))
	}
	next := item(21)
	sink.mustStore(t, next, true)
	s.wantOnce(t, append(sent, next)...)
	sink.close(t)
	s.wantOnce(t, append(sent, next)...)
}

func reopenAfterClose(t *testing.T, s *suite) {
	sink := s.open(t)
	sent := items(1, 5)
	for _, it := range sent {
		sink.mustStore(t, it, true)
	}
	sink.close(t)
	sink = s.open(t)
	for _, it := range sent {
		sink.mustStore(t, it, false)
	}
	next := item(6)
	sink.mustStore(t, next, true)
	sink.close(t)
	s.wantOnce(t, append(sent, next)...)
}

// wantVersions fails t unless the records of item i's key are the versions given, in
// that order, the last with its fields. For a target that keeps one record per key,
// only the last of want is expected.
func (s *suite) wantVersions(t *testing.T, i int, want ...int) {
	t.Helper()
	key := item(i).Key()
	recs := s.readBack(t)[key]
	if len(recs) == 0 {
		t.Fatalf("key %s: nothing read back, want versions %v", key, want)
	}
	got := make([]int, len(recs))
	seen := map[int]bool{}
	for j, r := range recs {
		got[j] = r.Version
		if seen[r.Version] {
			t.Errorf("key %s: version %d read back twice (versions %v)", key, r.Version, got)
		}
		seen[r.Version] = true
	}
	if len(recs) > 1 && fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("key %s: versions %v read back, want %v (or its last alone)", key, got, want)
	}
	last := want[len(want)-1]
	if diff := recordDiff(version(i, last), recs[len(recs)-1]); diff != "" {
		t.Errorf("key %s: last record is not version %d (-want +got):\n%s", key, last, diff)
	}
}

func versions(t *testing.T, s *suite) {
	sink := s.open(t)
	sink.mustStore(t, version(1, 1), true)
	sink.mustStore(t, version(1, 2), true)
	sink.mustStore(t, version(1, 1), false)
	sink.mustStore(t, version(1, 2), false)
	s.wantVersions(t, 1, 1, 2)
	if !s.features.Reopen {
		sink.close(t)
		s.wantVersions(t, 1, 1, 2)
		return
	}
	// A crash, then the versions delivered again to a new sink, and a newer one.
	sink = s.open(t)
	sink.mustStore(t, version(1, 2), false)
	sink.mustStore(t, version(1, 1), false)
	sink.mustStore(t, version(1, 3), true)
	sink.close(t)
	s.wantVersions(t, 1, 1, 2, 3)
}

func olderVersionLate(t *testing.T, s *suite) {
	sink := s.open(t)
	sink.mustStore(t, version(1, 3), true)
	sink.mustStore(t, version(1, 2), false) // first delivered after version 3
	sink.close(t)
	s.wantVersions(t, 1, 3)
}

func concurrentVersions(t *testing.T, s *suite) {
	const newest = 8
	sink := s.open(t)
	var calls []*spiders.Item
	for range 2 {
		for v := 1; v <= newest; v++ {
			calls = append(calls, version(1, v))
		}
	}
	stored := sink.storeAll(t, len(calls), calls)
	for key, n := range stored {
		if n > 1 {
			t.Errorf("%s: stored by %d calls, want at most 1", key, n)
		}
	}
	if n := stored[windowKey(version(1, newest))]; n != 1 {
		t.Errorf("version %d: stored by %d calls, want 1", newest, n)
	}
	sink.close(t)
	recs := s.readBack(t)[item(1).Key()]
	if len(recs) == 0 {
		t.Fatal("nothing read back")
	}
	if diff := recordDiff(version(1, newest), recs[len(recs)-1]); diff != "" {
		t.Errorf("last record is not version %d (-want +got):\n%s", newest, diff)
	}
	if len(recs) > len(stored) {
		t.Errorf("%d records read back, but %d calls reported stored", len(recs), len(stored))
	}
}
