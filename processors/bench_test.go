package processors

import (
	"context"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/processors/processorstest"
)

// storeCallers is how many goroutines call Store at once in the benchmarks: the store
// stage's default number of items in flight (handlers.Options.StoreConcurrency).
const storeCallers = 256

// BenchmarkStore measures Store throughput (items/s) of the file sinks with storeCallers
// concurrent callers, each item new. Every batch is fsynced, so the numbers follow the
// disk's fsync latency.
func BenchmarkStore(b *testing.B) {
	ctx := context.Background()
	b.Run("JSONL", func(b *testing.B) {
		s, err := OpenJSONL(filepath.Join(b.TempDir(), "items.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close(ctx)
		benchStore(b, s, storeCallers)
	})
	b.Run("CSV", func(b *testing.B) {
		s, err := OpenCSV(filepath.Join(b.TempDir(), "items.csv"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close(ctx)
		benchStore(b, s, storeCallers)
	})
}

// BenchmarkStorePostgres is BenchmarkStore for the Postgres sink, with other writer
// and caller counts. The test server runs with fsync=off: on a server that syncs its
// WAL, a batch costs one WAL flush more, shared by all its items.
func BenchmarkStorePostgres(b *testing.B) {
	ctx := context.Background()
	pg := processorstest.StartPostgres(b)
	for _, bc := range []struct {
		name    string
		cfg     PostgresConfig
		callers int
	}{
		{"default", PostgresConfig{}, storeCallers},
		{"writers=1", PostgresConfig{Writers: 1}, storeCallers},
		{"writers=4", PostgresConfig{Writers: 4}, storeCallers},
		{"callers=1", PostgresConfig{}, 1},
		{"callers=16", PostgresConfig{}, 16},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.cfg.URL = pg.URL()
			s, err := OpenPostgres(ctx, bc.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(ctx)
			benchStore(b, s, bc.callers)
			st := s.Stats()
			b.ReportMetric(float64(st.Rows)/float64(max(st.Batches, 1)), "items/batch")
		})
	}
}

// next numbers benchmark items across runs, so every Store is of a new key.
var next atomic.Int64

func benchStore(b *testing.B, s Sink, callers int) {
	b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Store(context.Background(), product(int(next.Add(1)), nil)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "items/s")
}
