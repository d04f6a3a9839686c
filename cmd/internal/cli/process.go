package cli

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Process prepares this process to run a command line and returns its context, which
// SIGINT and SIGTERM cancel for a graceful stop; call stop when the command returns.
// Components log Redis failures themselves, rate-limited, so go-redis's own log is
// quieted; and unless GOGC is set the heap is collected at 50% growth (see below).
func Process() (ctx context.Context, stop context.CancelFunc) {
	redis.SetLogger(quietRedis{})
	if os.Getenv("GOGC") == "" {
		// A worker's heap is mostly pages in flight, short-lived: collecting at 50% growth
		// instead of Go's 100% keeps the bench's peak RSS near 48 MiB instead of 56-60, for
		// about 0.1 CPU-s more per 1000 pages (README, Performance). GOGC overrides it.
		debug.SetGCPercent(50)
	}
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// quietRedis is a go-redis logger that drops every message (go-redis has one global
// logger: a library never sets it; a program whose components log failures themselves
// does, once).
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
