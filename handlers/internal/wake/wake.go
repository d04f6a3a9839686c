// Package wake puts goroutines that wait for a shared resource to sleep until it
// changes: the browser pool's tabs, the fetcher's proxy slots, its body budget and
// the render samples of adaptive rendering.
package wake

import (
	"context"
	"sync"
)

// Signal wakes every goroutine waiting on it each time Broadcast is called. Its zero
// value is ready; every call is made with the mutex that guards the resource held.
type Signal struct {
	ch chan struct{} // closed by Broadcast; nil when nobody waits
}

// Wait unlocks mu and blocks until the next Broadcast or until ctx ends, then returns
// ctx's error (nil after a Broadcast). mu is held on entry and not on return: the
// caller locks it again and looks at the resource anew.
func (s *Signal) Wait(ctx context.Context, mu sync.Locker) error {
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	ch := s.ch
	mu.Unlock()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ch:
		return nil
	}
}

// Broadcast wakes every goroutine in Wait.
func (s *Signal) Broadcast() {
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
