package loop

import (
	"math/rand/v2"
	"time"
)

// Backoff returns the wait before retry n (1-based; below 1 counts as 1) of something
// that keeps failing: d = base doubled per retry (at most max), jittered by ±50% (a
// random point in [d/2, 3d/2], d on average) so that workers failing together do not
// retry together. It never exceeds max, and is 0 when base is.
func Backoff(base, max time.Duration, n int) time.Duration {
	if base <= 0 {
		return 0
	}
	d := max
	if shift := min(n, 40) - 1; shift <= 0 {
		d = min(base, max)
	} else if base <= max>>shift {
		d = base << shift
	}
	return min(d/2+rand.N(d+1), max)
}
