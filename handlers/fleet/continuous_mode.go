package fleet

import (
	"time"

	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// NoIdleWindow is the Continuous of a crawl that is continuous without an idle window:
// never done while any revisit is scheduled (inspect.Continuous{On: true}), what
// `crawl --continuous` without --idle-window means. A positive Continuous is the idle
// window of a continuous crawl; 0, a crawl that ends. The registry keeps one number per
// crawl, so "on, no window" needs a value of its own.
const NoIdleWindow = -time.Millisecond

// ContinuousOf returns the Submission.Continuous that registers mode m.
func ContinuousOf(m inspect.Continuous) time.Duration {
	switch {
	case !m.On:
		return 0
	case m.IdleWindow > 0:
		return m.IdleWindow
	}
	return NoIdleWindow
}

// Mode returns the continuous mode the crawl was submitted with (see NoIdleWindow).
func (c Crawl) Mode() inspect.Continuous {
	switch {
	case c.Continuous > 0:
		return inspect.Continuous{On: true, IdleWindow: c.Continuous}
	case c.Continuous < 0:
		return inspect.Continuous{On: true}
	}
	return inspect.Continuous{}
}
