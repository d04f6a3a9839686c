package wake

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// TestBroadcastWakesEveryWaiter: three goroutines wait; one Broadcast wakes all three
// with a nil error, and a Broadcast with nobody waiting is a no-op.
func TestBroadcastWakesEveryWaiter(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var s Signal
	s.Broadcast() // nobody waits: nothing to close
	waiting := make(chan struct{})
	done := make(chan error)
	n := 3
	for range n {
		go func() {
			mu.Lock()
			waiting <- struct{}{}
			done <- s.Wait(context.Background(), &mu)
		}()
		<-waiting // that goroutine holds mu until Wait unlocks it
	}
	mu.Lock() // every waiter is past its unlock
	s.Broadcast()
	mu.Unlock()
	for range n {
		if err := <-done; err != nil {
			t.Fatalf("Wait after Broadcast = %v, want nil", err)
		}
	}
}

// TestWaitEndsWithContext: a Wait whose context ends returns the context's error and
// leaves the mutex unlocked.
func TestWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var s Signal
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	mu.Lock()
	if err := s.Wait(ctx, &mu); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if !mu.TryLock() {
		t.Fatal("Wait returned with the mutex still held")
	}
}
