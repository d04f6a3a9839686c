package handlers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ErrCorruptState is matched (errors.Is) by the error of a run that met a key of its
// crawl holding another type than the crawl keeps there (WRONGTYPE): the key was
// written by something else, and no retry can change that.
var ErrCorruptState = errors.New("handlers: crawl state in Redis is corrupt")

// stateGuard stops a run at the first command its Redis client sends that fails with
// WRONGTYPE (a go-redis hook on the run's client sees every command, in scripts and
// pipelines too); before it, every stage retried such a command every few seconds
// forever. As a component its Run returns the error, which ends the run.
type stateGuard struct {
	crawl string
	found chan struct{}
	once  sync.Once
	err   error
	off   atomic.Bool // the run is over: the hook stays on the client but does nothing
}

func newStateGuard(crawl string) *stateGuard {
	return &stateGuard{crawl: crawl, found: make(chan struct{})}
}

// Run waits for a WRONGTYPE error and returns it, or nil when ctx ends first.
func (g *stateGuard) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-g.found:
		return g.err
	}
}

// stop turns the hook off once the run is over, and returns the error of a WRONGTYPE
// seen until then (also one of the last writes as the run closed: the counters' flush).
// Safe on a nil guard.
func (g *stateGuard) stop() error {
	if g == nil {
		return nil
	}
	g.off.Store(true)
	select {
	case <-g.found:
		return g.err
	default:
		return nil
	}
}

// check stops the run when cmd failed with WRONGTYPE: err is what running it returned
// (a command's own error is not always set on it by then).
func (g *stateGuard) check(cmd redis.Cmder, err error) {
	if err == nil {
		err = cmd.Err()
	}
	if err == nil || g.off.Load() || !strings.Contains(err.Error(), "WRONGTYPE") {
		return
	}
	g.once.Do(func() {
		g.err = fmt.Errorf("%w: %s: %v; a key of crawl %s was overwritten outside the crawl: "+
			"run `streamcrawl reset --crawl %s` to start the crawl over, or restore that key",
			ErrCorruptState, describeCommand(cmd), err, g.crawl, g.crawl)
		close(g.found)
	})
}

// describeCommand names a command and the keys it touched: a script's KEYS, else its
// first argument.
func describeCommand(cmd redis.Cmder) string {
	args := cmd.Args()
	name := strings.ToUpper(cmd.Name())
	switch {
	case (name == "EVALSHA" || name == "EVAL" || name == "EVALSHA_RO" || name == "EVAL_RO") && len(args) > 2:
		n, _ := strconv.Atoi(fmt.Sprint(args[2]))
		keys := make([]string, 0, n)
		for i := 3; i < 3+n && i < len(args); i++ {
			keys = append(keys, fmt.Sprint(args[i]))
		}
		return "a script over the keys " + strings.Join(keys, ", ")
	case len(args) > 1:
		return name + " " + fmt.Sprint(args[1])
	}
	return name
}

// DialHook is the hook's part in dialling: none.
func (g *stateGuard) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook checks each command's error after it ran.
func (g *stateGuard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		g.check(cmd, err)
		return err
	}
}

// ProcessPipelineHook checks each command of a pipeline or transaction after it ran.
func (g *stateGuard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			g.check(cmd, nil)
		}
		if err != nil && len(cmds) > 0 {
			g.check(cmds[0], err) // a pipeline's error not set on any of its commands
		}
		return err
	}
}
