package fleet

import "context"

// The states pause and resume take a crawl from (`streamcrawl pause|resume` and the
// dashboard's buttons).
var (
	PauseFrom  = []State{Queued, Running}
	ResumeFrom = []State{Paused}
)

// ResumedState is where resume moves a paused crawl: back to running when a run of it
// had started (a resume is not a new run), else queued for the first worker to start.
func ResumedState(c Crawl) State {
	if c.Runs > 0 {
		return Running
	}
	return Queued
}

// Pause stops the workers serving crawl name (queued or running); its state stays in
// Redis. It returns the state the crawl was in, or an error matching ErrUnknownCrawl or
// ErrState.
func (r *Registry) Pause(ctx context.Context, name string) (State, error) {
	return r.Transition(ctx, name, PauseFrom, Paused, "")
}

// Resume makes paused crawl name active again (ResumedState). It returns the state it
// moved the crawl to, or an error matching ErrUnknownCrawl or ErrState.
func (r *Registry) Resume(ctx context.Context, name string) (State, error) {
	c, err := r.Get(ctx, name)
	if err != nil {
		return "", err
	}
	to := ResumedState(c)
	if _, err := r.Transition(ctx, name, ResumeFrom, to, ""); err != nil {
		return "", err
	}
	return to, nil
}
