package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// Waiting for Redis: a service started beside Redis (Docker Compose starts them
// together, and depends_on waits for the container, not for Redis to answer) waits for
// it up to --redis-wait instead of exiting at once.

// redisWaitEnv gives --redis-wait's default, as REDIS_URL gives --redis's.
const redisWaitEnv = "REDIS_WAIT"

// Backoff between tries while Redis does not answer.
const (
	redisWaitFirst = 200 * time.Millisecond
	redisWaitMax   = 5 * time.Second
)

// redisWaitFlag adds --redis-wait to a service's command.
func (a *App) redisWaitFlag(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&a.redisWait, "redis-wait", 0, "how long to wait for Redis to answer at start, trying again with backoff (a service started beside Redis, as Docker Compose does); 0: fail at once (default $"+redisWaitEnv+", else 0)")
}

// redisWaitFor returns how long the command waits for Redis: --redis-wait, else
// $REDIS_WAIT for a command that has the flag, else 0.
func (a *App) redisWaitFor() (time.Duration, error) {
	if !a.waitFlag || a.redisWait != 0 {
		return a.redisWait, nil
	}
	v := os.Getenv(redisWaitEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("$%s %q: want a duration such as 60s", redisWaitEnv, v)
	}
	return d, nil
}

// connectWaiting connects with o, trying again with backoff while Redis cannot be
// reached (refused, unresolved, timed out, still loading its data), for up to wait. It
// says so once, when it starts waiting. Errors a retry cannot mend (a bad URL, a wrong
// password) end it at once.
func (a *App) connectWaiting(ctx context.Context, o streams.ClientOptions, wait time.Duration) (*streams.Client, error) {
	c, err := streams.Connect(ctx, o)
	if err == nil || wait <= 0 || !unreachable(err) {
		return c, err
	}
	began := time.Now()
	a.Log.Info("waiting for redis to answer", zap.Duration("up_to", wait), zap.Error(err))
	for try := 1; ; try++ {
		pause := loop.Backoff(redisWaitFirst, redisWaitMax, try)
		if left := wait - time.Since(began); pause > left {
			pause = left
		}
		if pause <= 0 {
			return nil, fmt.Errorf("%w (waited %s: --redis-wait)", err, wait)
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return nil, err
		}
		if c, err = streams.Connect(ctx, o); err == nil || !unreachable(err) {
			if err == nil {
				a.Log.Info("redis answered", zap.Duration("after", time.Since(began).Round(time.Millisecond)))
			}
			return c, err
		}
	}
}

// unreachable reports an error of Connect that waiting may mend: no connection (refused,
// reset, unresolved host, timeout) or a server not ready yet (loading its data, a
// replica without its primary, a cluster still forming).
func unreachable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
