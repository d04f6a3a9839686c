package frontier

import (
	"context"
	"time"
)

// SetBeforeRun sets the dispatcher's test fault hook: f is called before each dispatch
// script, and an error from it aborts the round there, as a process killed before the
// script ran. It exists in test builds only.
func (f *Frontier) SetBeforeRun(hook func(window int) error) { f.beforeRun = hook }

// SetClock sets the clock that turns a retry's due time into a wait (time.Now by
// default): a test gives two fetchers clocks that disagree. It exists in test builds
// only.
func (f *Frontier) SetClock(now func() time.Time) { f.now = now }

// Dispatch runs one dispatch round over every partition and returns how many requests
// it moved. It exists in test builds only (Run runs rounds).
func (f *Frontier) Dispatch(ctx context.Context) (int, error) {
	n, _, err := f.round(ctx)
	return n, err
}

// MoveDue moves up to max due retries of partition part back to their host queues and
// returns how many. It exists in test builds only (Run moves them).
func (f *Frontier) MoveDue(ctx context.Context, part, max int) (int, error) {
	return f.moveDue(ctx, part, max)
}

// DefaultHostQuantum is the default Config.Quantum, for the tests.
const DefaultHostQuantum = defaultQuantum
