package rkit

import "sync"

// Gate admits senders to a queue until it is shut. Once shut returns, no admitted
// sender is still sending, so the queue's final drain sees every item that got in: a
// plain select between "send" and "stopped" can pick the send after the drain, and
// that item's caller then waits forever.
type Gate struct {
	mu     sync.RWMutex
	closed bool
}

// Enter admits a sender (false once shut); an admitted sender calls leave when done.
func (g *Gate) Enter() bool {
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return false
	}
	return true
}

func (g *Gate) Leave() { g.mu.RUnlock() }

// Shut admits no more senders and waits for the admitted ones to leave.
func (g *Gate) Shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}
