package frontier

import "time"

// SetBeforeRun sets the dispatcher's test fault hook: f is called before each dispatch
// script, and an error from it aborts the round there, as a process killed before the
// script ran. It exists in test builds only.
func (d *Dispatcher) SetBeforeRun(f func(window int) error) { d.beforeRun = f }

// SetClock sets the delayed set's clock (time.Now by default): a test gives two
// fetchers clocks that disagree. It exists in test builds only.
func (d *Delayed) SetClock(now func() time.Time) { d.now = now }
