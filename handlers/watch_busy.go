package handlers

import "time"

// busyReadEvery is how often a watcher reads the crawl's progress while its process is
// working (see busyGate).
const busyReadEvery = 2 * time.Second

// busyGate spares Redis the progress reads of a busy process. Reading a crawl's
// progress costs about 17 commands per partition (every stage's stream and group, the
// frontier's counts), and every process reads it every PollInterval: on a crawl of 24
// partitions with four processes that was ~6,500 commands a second, more than the
// pages themselves cost. While this process's counters move (it fetched, parsed or
// stored something since the last look), the crawl is plainly not done, so the watcher
// reads at most every busyReadEvery (for its progress log and the start-URL check); once
// they stand still it reads every PollInterval again. Done is then seen at most one
// PollInterval later than before, since the last page a process handles moves its
// counters one last time.
type busyGate struct {
	activity func() int64 // the process's counters' Activity; nil: never skip
	last     int64        // activity at the previous look
	readAt   time.Time    // when progress was last read
}

// skip reports whether the look at now may skip reading the progress.
func (g *busyGate) skip(now time.Time) bool {
	if g.activity == nil {
		return false
	}
	a := g.activity()
	moved := a != g.last
	g.last = a
	if moved && now.Sub(g.readAt) < busyReadEvery {
		return true
	}
	g.readAt = now
	return false
}
