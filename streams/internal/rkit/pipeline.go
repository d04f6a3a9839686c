package rkit

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Call is one command of a shared pipeline (see Exec): a script call (Script, Keys,
// Args) or any other command (Add). Reply holds its reply once the pipeline has run.
type Call struct {
	// Script, Keys and Args make a script call.
	Script *redis.Script
	// Keys are the script's KEYS.
	Keys []string
	// Args are the script's ARGV.
	Args []any
	// Add queues any other command on the pipeline (Script nil).
	Add func(ctx context.Context, p redis.Pipeliner) redis.Cmder
	// Reply is the call's reply once the pipeline has run.
	Reply redis.Cmder
}

// Exec sends calls in one pipeline. A script call that finds the script missing from
// the server's cache (NOSCRIPT: a restart flushed it; the call did not run) runs again
// with EVAL. Each call's error is in its Reply.
func Exec(ctx context.Context, rdb redis.UniversalClient, calls []*Call) {
	pipe := rdb.Pipeline()
	for _, c := range calls {
		if c.Script != nil {
			c.Reply = c.Script.EvalSha(ctx, pipe, c.Keys, c.Args...)
		} else {
			c.Reply = c.Add(ctx, pipe)
		}
	}
	_, _ = pipe.Exec(ctx) // each call's error is in its reply
	var again redis.Pipeliner
	for _, c := range calls {
		if c.Script != nil && IsNoScript(c.Reply.Err()) {
			if again == nil {
				again = rdb.Pipeline()
			}
			// EVAL loads it. A pipeline too: a durable one waits for its replicas.
			c.Reply = c.Script.Eval(ctx, again, c.Keys, c.Args...)
		}
	}
	if again != nil {
		_, _ = again.Exec(ctx)
	}
}

// Pipeline is a Group of single commands sent in shared pipelines.
type Pipeline = Group[*Call]

// NewPipeline returns a Group sending up to max calls per pipeline, each pipeline
// bounded by timeout, the first call of one waiting up to linger for others: a round
// trip costs Redis ~10 µs of network work whatever it carries, so a millisecond of
// latency buys a lot of Redis CPU when commands trickle in.
func NewPipeline(rdb redis.UniversalClient, max int, timeout, linger time.Duration) *Pipeline {
	return NewGroup(GroupConfig[*Call]{Max: max, Linger: linger, Timeout: timeout,
		Flush: func(ctx context.Context, calls []*Call) { Exec(ctx, rdb, calls) }})
}

// Defaults of the writers that share pipelines (publisher, emit queue, finisher,
// delayed set, per-host state).
const (
	// WriteTimeout bounds one shared round trip.
	WriteTimeout = 10 * time.Second
	// WriteLinger is how long a pipelined write waits for others to share its round
	// trip. Each round trip that finds Redis idle costs it a wake-up (measured on a
	// 2-core VM: ~50 µs of Redis CPU, against 2–5 µs per small command), so a few
	// milliseconds of latency here save more Redis CPU than any command does.
	WriteLinger = 5 * time.Millisecond
)

// durableKey marks a context whose pipelines carry writes a stage acks its input after.
type durableKey struct{}

// Durable returns ctx marked so that the pipelines sent under it wait for the replicas
// the client's durability asks for (streams.Client.SetDurability): every Group's
// flushes run under it.
func Durable(ctx context.Context) context.Context { return context.WithValue(ctx, durableKey{}, true) }

// IsDurable reports whether ctx was marked by Durable.
func IsDurable(ctx context.Context) bool { return ctx.Value(durableKey{}) != nil }
