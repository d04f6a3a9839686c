package rkit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Items of many goroutines go in shared batches of at most Max (by Size), an item over
// Max goes alone, every caller returns only after its batch ran, and Close runs what
// was queued and refuses what comes after.
func TestGroupBatchesBySizeAndRunsEverythingQueued(t *testing.T) {
	var mu sync.Mutex
	var batches [][]int
	ran := map[int]bool{}
	g := NewGroup(GroupConfig[int]{Max: 10, Size: func(n int) int { return n }, Linger: 20 * time.Millisecond, Timeout: time.Second,
		Flush: func(_ context.Context, b []int) {
			mu.Lock()
			defer mu.Unlock()
			batches = append(batches, append([]int(nil), b...))
			for _, n := range b {
				ran[n] = true
			}
		}})
	var wg sync.WaitGroup
	for _, n := range []int{1, 2, 3, 4, 5, 6, 25} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := g.Do(context.Background(), n); err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !ran[n] {
				t.Errorf("Do(%d) returned before its batch ran", n)
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, b := range batches {
		sum := 0
		for _, n := range b {
			sum += n
		}
		if sum > 10 && len(b) > 1 {
			t.Errorf("batch %v holds %d, over the max of 10", b, sum)
		}
		total += sum
	}
	if total != 46 || len(batches) > 5 {
		t.Fatalf("batches %v: want the 7 items (46) in at most 5 batches", batches)
	}

	waits := make([]<-chan struct{}, 0, 20)
	for range 20 {
		w, err := g.Submit(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	_ = g.Close(context.Background())
	for _, w := range waits {
		<-w // each ran: Close drained the queue
	}
	if err := g.Do(context.Background(), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close = %v, want ErrClosed", err)
	}
}
