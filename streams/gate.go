package streams

import "sync"

// gate admits senders to a queue until it is shut. Once shut returns, no admitted
// sender is still sending, so the queue's final drain sees every item that got in: a
// plain select between "send" and "stopped" can pick the send after the drain, and
// that item's caller then waits forever.
type gate struct {
	mu     sync.RWMutex
	closed bool
}

// enter admits a sender (false once shut); an admitted sender calls leave when done.
func (g *gate) enter() bool {
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return false
	}
	return true
}

func (g *gate) leave() { g.mu.RUnlock() }

// shut admits no more senders and waits for the admitted ones to leave.
func (g *gate) shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}
