package frontier

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"

	"github.com/redis/go-redis/v9"
)

// DefaultEmitLinger is how long the first page's emit waits for other pages' emits to
// share its script call (see FrontierConfig.Linger).
const DefaultEmitLinger = 10 * time.Millisecond

// maxEmitArgs bounds the script arguments one coalesced call gathers (a single share
// with more goes alone).
const maxEmitArgs = 2048

// maxEmitChunk is the most requests of one page in one script call: a page with more
// (a sitemap, a directory listing) is queued in several calls, each short enough not to
// hold up Redis for other clients (about 25 µs of Redis time per request to a new host).
const maxEmitChunk = 400

// emitShare is one page's share of one partition's emit: its requests whose hosts fall
// in the partition and, in the page's own partition, its items.
type emitShare struct {
	part  int
	reqs  []any    // fingerprint, score band, payload, host, rule per request
	fps   [][]byte // the requests' fingerprints, for the seen cache (nil: none)
	items []any    // key, payload, message ID per item
	out   string   // the script's outcome bytes for this share: requests, then items
	err   error
	done  chan struct{}
}

func (s *emitShare) nreqs() int  { return len(s.reqs) / 5 }
func (s *emitShare) nitems() int { return len(s.items) / 3 }
func (s *emitShare) args() int   { return len(s.reqs) + len(s.items) }

// emitQueue coalesces the emits of pages parsed at about the same time into one emit
// script call per partition: the first waits up to the linger for company. A script
// call costs Redis a fixed ~10–50 µs (more when the call wakes it) on top of the
// commands it runs, and most pages find one or two new links, so one call for several
// pages costs Redis a fraction of one per page. A page waits for its own share's
// outcome, so it never learns "done" before Redis has its requests and items.
type emitQueue struct {
	f      *Frontier
	linger time.Duration
	in     chan *emitShare
	stop   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
	gate   rkit.Gate // no submit is under way once run drains the queue
}

func newEmitQueue(f *Frontier, linger time.Duration) *emitQueue {
	q := &emitQueue{f: f, linger: linger, in: make(chan *emitShare, 256), stop: make(chan struct{})}
	q.wg.Add(1)
	go q.run()
	return q
}

// submit queues s; once queued it always runs, even when the queue closes meanwhile.
func (q *emitQueue) submit(ctx context.Context, s *emitShare) error {
	s.done = make(chan struct{})
	if !q.gate.Enter() {
		return rkit.ErrClosed
	}
	defer q.gate.Leave()
	select {
	case q.in <- s:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (q *emitQueue) run() {
	defer q.wg.Done()
	var next *emitShare // a share that did not fit in the last batch
	for {
		if next != nil {
			var batch []*emitShare
			batch, next = q.gather(next)
			q.flush(batch)
			continue
		}
		select {
		case s := <-q.in:
			var batch []*emitShare
			batch, next = q.gather(s)
			q.flush(batch)
		case <-q.stop:
			for {
				select {
				case s := <-q.in:
					q.flush([]*emitShare{s})
				default:
					return
				}
			}
		}
	}
}

// gather collects shares after first until the linger passes or the batch is full. A
// share that would overfill the batch is returned as next, to start the next batch: a
// page with a huge number of links (a sitemap) goes alone, so that if Redis refuses
// its call, no other page's call fails with it.
func (q *emitQueue) gather(first *emitShare) (batch []*emitShare, next *emitShare) {
	batch = []*emitShare{first}
	args := first.args()
	if q.linger <= 0 || args >= maxEmitArgs {
		return batch, nil
	}
	t := time.NewTimer(q.linger)
	defer t.Stop()
	for {
		select {
		case s := <-q.in:
			if args+s.args() > maxEmitArgs {
				return batch, s
			}
			batch = append(batch, s)
			args += s.args()
		case <-t.C:
			return batch, nil
		case <-q.stop:
			return batch, nil
		}
	}
}

// partCall is one partition's script call in a flush.
type partCall struct {
	part   int
	shares []*emitShare
	n, m   int
	limit  int64
	budget int
	keys   []string
	args   []any
	cmd    *redis.Cmd
	err    error
}

// flush runs one script call per partition of batch, in one pipeline, and hands each
// share its outcomes.
func (q *emitQueue) flush(batch []*emitShare) {
	ctx, cancel := context.WithTimeout(context.Background(), streams.DefaultPublishTimeout)
	defer cancel()
	var calls []*partCall
	byPart := map[int]*partCall{}
	for _, s := range batch {
		c := byPart[s.part]
		if c == nil {
			c = &partCall{part: s.part}
			byPart[s.part] = c
			calls = append(calls, c)
		}
		c.shares = append(c.shares, s)
		c.n += s.nreqs()
		c.m += s.nitems()
	}
	f := q.f
	pipe := f.rdb.Pipeline()
	for _, c := range calls {
		c.limit = f.maxRequests
		if c.limit > 0 && f.layout.N() > 1 && c.n > 0 {
			if c.limit, c.err = f.reserve(ctx, c.n); c.err != nil {
				continue
			}
			c.budget = 1
		}
		a := make([]any, 0, emitHead+5*c.n+3*c.m)
		a = append(a, c.n, c.limit, f.order.sign(), f.window, f.unreadMode(), f.revisit.Milliseconds(), c.budget, c.m)
		a = append(a, f.hosts.args()...)
		a = append(a, f.layout.idPrefix(c.part))
		for _, s := range c.shares {
			a = append(a, s.reqs...)
		}
		for _, s := range c.shares {
			a = append(a, s.items...)
		}
		k := f.layout.Part(c.part)
		c.keys = []string{k.Seen(), k.Waiting(), k.Stats(), k.Seq(), k.Requests(), k.SeenAt(), k.Items(), k.ItemKeys(),
			k.Ready(), k.Sched(), k.Leases(), k.Hosts(), k.HostQueuePrefix()}
		c.args = a
		c.cmd = f.emit.EvalSha(ctx, pipe, c.keys, c.args...)
	}
	_, _ = pipe.Exec(ctx) // per-call errors are read below
	for _, c := range calls {
		if c.err == nil {
			c.err = c.cmd.Err()
			if rkit.IsNoScript(c.err) {
				// Redis lost its script cache (restart): load it and go again.
				c.cmd = f.emit.Run(ctx, f.rdb, c.keys, c.args...)
				c.err = c.cmd.Err()
			}
		}
		q.finish(ctx, c)
	}
}

// finish hands c's outcomes to its shares and gives back an unspent max_pages budget.
func (q *emitQueue) finish(ctx context.Context, c *partCall) {
	defer func() {
		for _, s := range c.shares {
			if c.err != nil {
				s.err = c.err
			}
			close(s.done)
		}
	}()
	if c.err != nil {
		c.err = fmt.Errorf("frontier: emit %d requests and %d items: %w", c.n, c.m, c.err)
		return
	}
	out, err := c.cmd.Text()
	if err != nil || len(out) != c.n+c.m {
		c.err = fmt.Errorf("frontier: emit reply %q for %d requests and %d items: %v", out, c.n, c.m, err)
		return
	}
	reqs, items := out[:c.n], out[c.n:]
	for _, s := range c.shares {
		s.out = reqs[:s.nreqs()] + items[:s.nitems()]
		reqs, items = reqs[s.nreqs():], items[s.nitems():]
	}
	if c.budget == 1 {
		if spent := int64(strings.Count(out[:c.n], "q")); spent < c.limit {
			// Give back the unspent reservation. Best effort: the requests are queued, and
			// a failure here only leaves some of the budget unspent.
			_ = q.f.rdb.HIncrBy(ctx, q.f.layout.Global().Stats(), "max_pages_used", spent-c.limit).Err()
		}
	}
}

// nextMessageID returns a message ID unique in the crawl: this process's random prefix
// and a counter.
func nextMessageID() string {
	return idPrefix + strconv.FormatUint(idCounter.Add(1), 36)
}

var (
	idPrefix  = "sc-" + randomHex(6) + "-"
	idCounter atomic.Uint64
)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather than return an error)
	return hex.EncodeToString(b)
}

// close runs what is queued and stops.
func (q *emitQueue) close() {
	q.once.Do(func() {
		q.gate.Shut()
		close(q.stop)
	})
	q.wg.Wait()
}
