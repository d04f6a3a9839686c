package processorstest_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/streamcrawl/streamcrawl/processors/processorstest"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// memTarget is where memory sinks store: one record per key, its newest version.
type memTarget struct {
	mu      sync.Mutex
	records map[string]processorstest.Record
}

// memSink is a minimal sink that keeps the contract: Store decides and writes under
// one lock (no check-then-set), so it is idempotent and safe for concurrent use; a
// record is "durable" once it is in the map; a newer version replaces its key's record.
type memSink struct {
	target *memTarget
	closed bool
}

func (s *memSink) Store(ctx context.Context, it *spiders.Item) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.target.mu.Lock()
	defer s.target.mu.Unlock()
	if s.closed {
		return false, errors.New("memsink: closed")
	}
	key := it.Key()
	if old, ok := s.target.records[key]; ok && old.Version >= it.Version {
		return false, nil // stored already, or a newer version is
	}
	s.target.records[key] = processorstest.Record{Key: key, Version: it.Version, Type: it.Type,
		URL: it.URL, Fields: maps.Clone(it.Fields)}
	return true, nil
}

func (s *memSink) Close(context.Context) error {
	s.target.mu.Lock()
	defer s.target.mu.Unlock()
	s.closed = true
	return nil
}

// memFeatures: a new memSink on a target sees what the ones before stored (Reopen),
// and a key keeps its newest version whatever the order they come in.
var memFeatures = processorstest.SinkFeatures{Reopen: true, Versions: true, OlderVersionsRefused: true}

// newMemTarget returns a new, empty target; its sinks share it, and ReadBack reads
// it from outside them.
func newMemTarget(*testing.T) processorstest.SinkTarget {
	target := &memTarget{records: map[string]processorstest.Record{}}
	return processorstest.SinkTarget{
		Open: func(*testing.T) processorstest.Sink { return &memSink{target: target} },
		ReadBack: func(*testing.T) []processorstest.Record {
			target.mu.Lock()
			defer target.mu.Unlock()
			return slices.Collect(maps.Values(target.records))
		},
	}
}

// A sink runs the contract suite from its own tests, declaring its features and
// giving a new target (file, table) for each subtest. Here, a sink that keeps its
// records in memory; in its package's _test.go file:
//
//	func TestMemSink(t *testing.T) {
//		processorstest.TestSink(t, memFeatures, newMemTarget)
//	}
func ExampleTestSink() {
	testMemSink := func(t *testing.T) {
		processorstest.TestSink(t, memFeatures, newMemTarget)
	}
	_ = testMemSink // run by TestMemSink in this package's tests
}
