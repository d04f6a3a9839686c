package streams

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// defaultWaitTimeout is how long a durable write waits for its replicas before it counts
// as refused (see ErrNotReplicated).
const defaultWaitTimeout = 5 * time.Second

// ErrNotReplicated wraps the errors of writes that fewer replicas than the client's
// durability asks for acknowledged within the wait. The writes are on the primary, but
// a failover could lose them: the stage that made them does not ack its input, which is
// handed out again once Redis has its replicas back. It is a refusal of writes (see
// Fail): an outage to wait out, never a failed delivery.
var ErrNotReplicated = fmt.Errorf("%w: not on enough replicas", errWriteRefused)

// Durability says when the writes a stage acks its input after count as done.
type Durability struct {
	// Mode is spiders.DurabilityAsync ("" too): a stage's input is acked once its output
	// is on the primary, and a failover can lose what the replicas had not received yet;
	// or spiders.DurabilityReplicated: acked only once its output is on the primary and
	// on Replicas replicas (WAIT), and a failover loses none of it.
	Mode string
	// Replicas is how many replicas must acknowledge the writes with
	// spiders.DurabilityReplicated. Default 1.
	Replicas int
	// Timeout bounds each wait for the replicas. Default 5 s; at most
	// 8 s (a connection's read timeout is 10 s).
	Timeout time.Duration
}

func (d *Durability) setDefaults() {
	if d.Mode == "" {
		d.Mode = spiders.DurabilityAsync
	}
	if d.Mode == spiders.DurabilityReplicated && d.Replicas == 0 {
		d.Replicas = 1
	}
	if d.Timeout == 0 {
		d.Timeout = defaultWaitTimeout
	}
}

// validate reports a durability that cannot work.
func (d *Durability) validate() error {
	switch {
	case d.Mode != spiders.DurabilityAsync && d.Mode != spiders.DurabilityReplicated:
		return fmt.Errorf("streams: durability %q: want %s or %s", d.Mode, spiders.DurabilityAsync, spiders.DurabilityReplicated)
	case d.Replicas < 0 || d.Mode == spiders.DurabilityAsync && d.Replicas > 0:
		return fmt.Errorf("streams: durability %s with %d replicas", d.Mode, d.Replicas)
	case d.Timeout < 0 || d.Timeout > 8*time.Second:
		return fmt.Errorf("streams: durability wait %v: want at most 8s", d.Timeout)
	}
	return nil
}

// SetDurability makes the writes that stages ack their input after (the pipelines of the
// publisher, the frontier's emits, finishes and retries) wait for d.Replicas replicas
// with spiders.DurabilityReplicated: each such pipeline ends with WAIT on the connection that
// wrote (on a cluster, on each master that took writes), in the same round trip. A WAIT
// that fewer replicas answer within d.Timeout turns the pipeline's writes into
// ErrNotReplicated errors: the stage does not ack its input. It fails when the primary
// (every master of a cluster) has fewer connected replicas than asked, or the Redis is
// the embedded one. spiders.DurabilityAsync turns the waits off.
func (c *Client) SetDurability(ctx context.Context, d Durability) error {
	d.setDefaults()
	if err := d.validate(); err != nil {
		return err
	}
	if d.Mode == spiders.DurabilityReplicated {
		switch {
		case c.Embedded != nil:
			return errors.New("streams: durability replicated needs a Redis with replicas; the embedded Redis has none")
		case c.wait == nil:
			return errors.New("streams: durability replicated needs a client made by Connect")
		}
		if err := checkReplicas(ctx, c.UniversalClient, d.Replicas); err != nil {
			return err
		}
	}
	if c.wait != nil {
		c.wait.set(d.Replicas, d.Timeout)
	}
	return nil
}

// Durable returns ctx marked so that pipelines sent under it end with the wait for
// replicas that the client's durability asks for (see SetDurability), as the stages'
// group-commit writes do: for a write that later writes depend on (a response
// dictionary) or that confirms one read (WAIT covers every write replicated before the
// connection's own). Single commands never wait: send such writes as a pipeline.
func Durable(ctx context.Context) context.Context { return rkit.Durable(ctx) }

// checkReplicas fails when the primary, or a master of a cluster, has fewer than n
// replicas connected.
func checkReplicas(ctx context.Context, rdb redis.UniversalClient, n int) error {
	check := func(ctx context.Context, node redis.UniversalClient, name string) error {
		info, err := node.InfoMap(ctx, "replication").Result()
		if err != nil {
			return fmt.Errorf("streams: durability replicated: read the replicas of %s: %w", name, err)
		}
		got, _ := strconv.Atoi(info["Replication"]["connected_slaves"])
		if got < n {
			return fmt.Errorf("streams: durability replicated asks for %d replicas; the primary %s has %d connected", n, name, got)
		}
		return nil
	}
	cc, ok := AsCluster(rdb)
	if !ok {
		return check(ctx, rdb, "")
	}
	var mu sync.Mutex
	var first error
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		if err := check(ctx, m, m.Options().Addr); err != nil {
			mu.Lock()
			first = cmpOr(first, err)
			mu.Unlock()
		}
		return nil
	})
	return cmpOr(first, err)
}

// cmpOr returns a if it is not nil, else b.
func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// waitHook ends every durable pipeline (rkit.Durable) with WAIT replicas timeout while
// its client's durability asks for replicas. It is a hook of each connection pool: of
// the client, or of every node of a cluster, so the WAIT goes on the connection that
// carried the node's writes, after them.
type waitHook struct {
	replicas atomic.Int64
	timeout  atomic.Int64 // ms
}

func (h *waitHook) set(replicas int, timeout time.Duration) {
	h.timeout.Store(timeout.Milliseconds())
	h.replicas.Store(int64(replicas))
}

// DialHook is go-redis's; the hook does nothing to dials.
func (h *waitHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook is go-redis's; single commands are never durable writes.
func (h *waitHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook appends the WAIT to durable pipelines and turns their writes into
// ErrNotReplicated errors when fewer replicas than asked acknowledged them.
func (h *waitHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		n := h.replicas.Load()
		if n == 0 || !rkit.IsDurable(ctx) {
			return next(ctx, cmds)
		}
		timeout := h.timeout.Load()
		wait := redis.NewIntCmd(ctx, "wait", n, timeout)
		err := next(ctx, append(cmds[:len(cmds):len(cmds)], wait))
		got, werr := wait.Result()
		if werr == nil && got >= n {
			return err
		}
		fail := fmt.Errorf("%w: WAIT %d %d: %d acknowledged", ErrNotReplicated, n, timeout, got)
		if werr != nil {
			fail = fmt.Errorf("%w: WAIT %d %d: %w", ErrNotReplicated, n, timeout, werr)
		}
		for _, c := range cmds {
			if c.Err() == nil {
				c.SetErr(fail)
			}
		}
		if err == nil {
			err = fail
		}
		return err
	}
}
