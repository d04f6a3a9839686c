package rkit

import (
	"context"
	"time"
)

// Cleanup returns the context of cleanup that must still write once ctx ended (the last
// flush of a Close(ctx)): ctx's values without its cancellation, ending at ctx's
// deadline when it has one, else after timeout. So a caller's deadline bounds the
// flush, and a Close called with a cancelled context (the run's own, after a signal)
// still gets timeout to write.
func Cleanup(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	c := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(c, d)
	}
	return context.WithTimeout(c, timeout)
}
