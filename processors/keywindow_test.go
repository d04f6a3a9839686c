package processors

import (
	"bufio"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestKeyWindowIsTheLastN: against a model (a map and a list), a window of 100 keys
// knows exactly the last 100 distinct keys added, through 200,000 adds whose hashes
// share few low bits (long probe runs that wrap around the table, and removals from
// the middle of them). (0 and 1 are one hash to the window.)
func TestKeyWindowIsTheLastN(t *testing.T) {
	const n = 100
	w := newKeyWindow(n)
	if len(w.table) != 256 || len(w.ring) != n {
		t.Fatalf("table %d slots, ring %d, want 256 and %d", len(w.table), len(w.ring), n)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var order []uint64
	in := map[uint64]bool{}
	for i := 0; i < 200_000; i++ {
		h := r.Uint64N(400)*0x1_0000_0000 + 2 + uint64(r.IntN(3)) // hashes of few homes: 2, 3, 4
		if i%7 == 0 {
			h = r.Uint64() | 1<<63 // and some spread over the table
		}
		if got := w.has(h); got != in[h] {
			t.Fatalf("add %d: has(%x) = %v, want %v", i, h, got, in[h])
		}
		w.add(h)
		if !in[h] {
			in[h] = true
			order = append(order, h)
			if len(order) > n {
				delete(in, order[0])
				order = order[1:]
			}
		}
	}
	for h := range in {
		if !w.has(h) {
			t.Fatalf("%x is among the last %d but not known", h, n)
		}
	}
	used := 0
	for _, h := range w.table {
		if h != 0 {
			used++
		}
	}
	if used != n {
		t.Fatalf("%d slots used, want %d", used, n)
	}
}

// TestJSONLRedeliveredAfterKillNotWrittenTwice: a JSONL sink of a 64-key window is
// abandoned after 1,000 items (a killed worker: every Store that returned is fsynced;
// the last 64 were not acked); a new sink on the file gets those 64 again, at once, as
// a replacement's redelivery does, and writes none of them; new items still go in, and
// an item redelivered after fewer than 64 newer ones is skipped too. A key older than
// the window is written again: the crawl's item dedup, not the file, keeps it from
// coming.
func TestJSONLRedeliveredAfterKillNotWrittenTwice(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "items.jsonl")
	killed, err := openJSONL(path, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = killed.Close(ctx) })
	for i := 1; i <= 1000; i++ {
		mustStore(t, killed, product(i, nil), true)
	}

	s, err := openJSONL(path, 64)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	written := 0
	for i := 1000 - 63; i <= 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stored, err := s.Store(ctx, product(i, nil))
			if err != nil {
				t.Errorf("redeliver %d: %v", i, err)
			}
			if stored {
				mu.Lock()
				written++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if written != 0 {
		t.Fatalf("%d of the 64 redelivered items written again", written)
	}
	for i := 1001; i <= 1010; i++ {
		mustStore(t, s, product(i, nil), true)
	}
	mustStore(t, s, product(990, nil), false) // 20 newer keys: in the window
	mustStore(t, s, product(1, nil), true)    // 1,009 newer keys: out of it
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	count := map[string]int{}
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		key, err := recordKey(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		count[key]++
	}
	if lines != 1011 || len(count) != 1010 || count[product(1, nil).Key()] != 2 {
		t.Fatalf("%d lines, %d keys, product 1 %d times; want 1011, 1010 and 2", lines, len(count), count[product(1, nil).Key()])
	}
}
