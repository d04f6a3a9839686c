package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Process prepares this process to run a command line and returns its context, which
// SIGINT and SIGTERM cancel for a graceful stop; call stop when the command returns.
// Components log Redis failures themselves, rate-limited, so go-redis's own log is
// quieted; and unless GOGC or GOMEMLIMIT is set the collector runs under a soft memory
// limit instead of at each 50% of growth (setGCDefaults, defaultMemoryLimit).
func Process() (ctx context.Context, stop context.CancelFunc) {
	redis.SetLogger(quietRedis{})
	watch := setGCDefaults(os.Getenv)
	ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if watch {
		go watchGC(ctx)
	}
	return ctx, stop
}

// quietRedis is a go-redis logger that drops every message (go-redis has one global
// logger: a library never sets it; a program whose components log failures themselves
// does, once).
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// interruptedMsg is what a command that SIGINT or SIGTERM stopped says on stderr.
const interruptedMsg = "interrupted; run the same command to resume"

// interruptedEmbeddedMsg is interruptedMsg for a crawl on an embedded Redis, whose state
// ends with the process.
const interruptedEmbeddedMsg = "interrupted; the embedded Redis ended with this process, so nothing is left to resume (crawl with --redis URL to be able to resume)"

// endInterrupted ends a command that runs until done or interrupted: when ctx ended
// (SIGINT, SIGTERM) it says interruptedMsg after the command's name and returns nil
// (exit 0), whatever moment the signal came at: while connecting, while a stage creates
// its consumer group, or mid-crawl. An error other than the cancellation itself is
// logged, not lost. Otherwise it returns err.
func (a *App) endInterrupted(ctx context.Context, name string, err error) error {
	if ctx.Err() == nil {
		return err
	}
	if err != nil && !errors.Is(err, context.Canceled) && a.Log != nil {
		a.Log.Warn("error while stopping", zap.Error(err))
	}
	msg := interruptedMsg
	if a.embedded {
		msg = interruptedEmbeddedMsg
	}
	fmt.Fprintf(a.Stderr, "%s: %s\n", name, msg)
	return nil
}
