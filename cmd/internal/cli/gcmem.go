package cli

import (
	"context"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// defaultMemoryLimit is the soft limit on the Go runtime's memory (heap, stacks, runtime
// metadata; not the binary's code) that a streamcrawl process keeps when neither GOGC nor
// GOMEMLIMIT is set, with the proportional collector off below it: the collector then
// runs when the heap reaches the limit, not each time it grows by half, so a worker whose
// heap is mostly pages in flight (about 12 MiB live on the bench) collects less than half
// as often at about the same peak RSS (docs/performance.md).
const defaultMemoryLimit = 36 << 20

// gcPercentDefault is the proportional setting a process falls back to: when the user has
// set GOMEMLIMIT but not GOGC, and when the live heap is too large for defaultMemoryLimit.
const gcPercentDefault = 50

// Live-heap thresholds of the limit (percent of it): above gcLeaveLimitPct the limit
// would collect more often than gcPercentDefault would (its room above the live heap is
// smaller than half the live heap), so the process falls back to the proportional
// collector with no limit; below gcEnterLimitPct it goes back to the limit. The gap
// keeps a heap near the edge from switching back and forth.
const (
	gcLeaveLimitPct = 55
	gcEnterLimitPct = 40
)

// gcWatchEvery is how often the live heap is read to choose between the two.
const gcWatchEvery = 500 * time.Millisecond

// setGCDefaults applies this process's collector settings from the environment getenv
// reads and reports whether the live heap must be watched (watchGC): GOGC set, nothing
// changes (the runtime applied it, with GOMEMLIMIT if set); GOMEMLIMIT alone, the
// collector runs at gcPercentDefault under the user's limit; neither, the proportional
// collector is off under defaultMemoryLimit.
func setGCDefaults(getenv func(string) string) (watch bool) {
	switch {
	case getenv("GOGC") != "":
		return false
	case getenv("GOMEMLIMIT") != "":
		debug.SetGCPercent(gcPercentDefault)
		return false
	default:
		setGCMode(true)
		return true
	}
}

// setGCMode sets the collector to the default limit (limited) or to the proportional
// fallback with no limit.
func setGCMode(limited bool) {
	if limited {
		debug.SetMemoryLimit(defaultMemoryLimit)
		debug.SetGCPercent(-1)
		return
	}
	debug.SetGCPercent(gcPercentDefault)
	debug.SetMemoryLimit(math.MaxInt64)
}

// nextGCMode is the mode for a live heap of live bytes, the mode now being limited.
func nextGCMode(limited bool, live uint64) bool {
	if limited {
		return live*100 <= defaultMemoryLimit*gcLeaveLimitPct
	}
	return live*100 < defaultMemoryLimit*gcEnterLimitPct
}

// watchGC reads the live heap every gcWatchEvery until ctx ends and switches between the
// limit and the proportional fallback as nextGCMode says. It starts limited.
func watchGC(ctx context.Context) {
	t := time.NewTicker(gcWatchEvery)
	defer t.Stop()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	limited := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		if next := nextGCMode(limited, s[0].Value.Uint64()); next != limited {
			limited = next
			setGCMode(limited)
		}
	}
}
