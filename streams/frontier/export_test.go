package frontier

// SetBeforeRun sets the dispatcher's test fault hook: f is called before each dispatch
// script, and an error from it aborts the round there, as a process killed before the
// script ran. It exists in test builds only.
func (d *Dispatcher) SetBeforeRun(f func(window int) error) { d.beforeRun = f }
