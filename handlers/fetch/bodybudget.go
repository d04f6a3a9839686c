package fetch

import (
	"bufio"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wake"
)

// bodyBudget bounds the response body bytes one fetch process holds at once (read, or
// waiting to be encoded for the responses stream). A fetch reserves what the response
// announces (Content-Length) before reading, and more as an unannounced body grows;
// when the budget is spent, further reads wait. The oldest fetch in flight may always
// grow (by at most one max_body_size over the budget), so fetches never wait on each
// other in a circle.
type bodyBudget struct {
	limit int64

	mu      sync.Mutex
	used    int64
	peak    int64 // the most reserved at once
	next    uint64
	holders []uint64    // ticket IDs in start order; the first is the oldest
	changed wake.Signal // broadcast whenever bytes are released
}

func newBodyBudget(limit int64) *bodyBudget {
	return &bodyBudget{limit: limit}
}

// bodyTicket is one fetch's share of the budget.
type bodyTicket struct {
	b    *bodyBudget
	id   uint64
	held int64
	once sync.Once
	buf  *[]byte // the pooled body buffer, back to the pool on release
}

// start reserves want bytes for a new fetch, waiting while the budget cannot take them
// (a fetch alone in flight always gets them).
func (b *bodyBudget) start(ctx context.Context, want int64) (*bodyTicket, error) {
	b.mu.Lock()
	b.next++
	t := &bodyTicket{b: b, id: b.next}
	b.mu.Unlock()
	for {
		b.mu.Lock()
		if b.used+want <= b.limit || len(b.holders) == 0 {
			b.used += want
			b.peak = max(b.peak, b.used)
			t.held = want
			b.holders = append(b.holders, t.id)
			b.mu.Unlock()
			return t, nil
		}
		if err := b.changed.Wait(ctx, &b.mu); err != nil {
			return nil, err
		}
	}
}

// grow makes the ticket hold at least to bytes, waiting while the budget is spent,
// unless this is the oldest fetch in flight.
func (t *bodyTicket) grow(ctx context.Context, to int64) error {
	b := t.b
	for {
		b.mu.Lock()
		if to <= t.held {
			b.mu.Unlock()
			return nil
		}
		d := to - t.held
		if b.used+d <= b.limit || (len(b.holders) > 0 && b.holders[0] == t.id) {
			b.used += d
			b.peak = max(b.peak, b.used)
			t.held = to
			b.mu.Unlock()
			return nil
		}
		if err := b.changed.Wait(ctx, &b.mu); err != nil {
			return err
		}
	}
}

// release gives the ticket's bytes back (and its buffer to the pool); safe on nil and
// more than once.
func (t *bodyTicket) release() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		b := t.b
		b.mu.Lock()
		b.used -= t.held
		t.held = 0
		for i, id := range b.holders {
			if id == t.id {
				b.holders = append(b.holders[:i], b.holders[i+1:]...)
				break
			}
		}
		b.changed.Broadcast()
		b.mu.Unlock()
		if t.buf != nil {
			putBodyBuffer(t.buf)
			t.buf = nil
		}
	})
}

// usage returns the bytes reserved now and the most reserved at once.
func (b *bodyBudget) usage() (now, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.peak
}

// budgetStep is how much a growing body reserves at a time.
const budgetStep = 256 << 10

// budgetReader reserves budget before each read of a body.
type budgetReader struct {
	ctx  context.Context
	r    io.Reader
	t    *bodyTicket
	read int64
}

func (br *budgetReader) Read(p []byte) (int, error) {
	if len(p) > budgetStep {
		p = p[:budgetStep]
	}
	if need := br.read + int64(len(p)); need > br.t.held {
		if err := br.t.grow(br.ctx, br.read+budgetStep); err != nil {
			return 0, err
		}
	}
	n, err := br.r.Read(p)
	br.read += int64(n)
	return n, err
}

// bodyBuffers pools body buffers between fetches.
var bodyBuffers sync.Pool

// getBodyBuffer returns an empty buffer, pooled when one is free.
func getBodyBuffer(hint int64) *[]byte {
	if p, ok := bodyBuffers.Get().(*[]byte); ok && int64(cap(*p)) >= hint {
		*p = (*p)[:0]
		return p
	}
	b := make([]byte, 0, hint)
	return &b
}

// putBodyBuffer pools a buffer unless it is too big to keep around.
func putBodyBuffer(p *[]byte) {
	if cap(*p) <= maxPooledBody {
		bodyBuffers.Put(p)
	}
}

// maxPooledBody is the largest body buffer kept in the pool.
const maxPooledBody = 1 << 20

// defaultBodyBudget returns the default per-process budget of body bytes in flight:
// 1/400 of the machine's memory, between 32 MiB and 256 MiB (64 MiB when the memory
// cannot be read). A fetch process with large pages peaks at about five times its
// budget (each body, its JSON, its compressed copy, the collector's headroom): 341 MiB
// RSS measured for 32 pages of 10 MB at once under a 64 MiB budget. Pages of ordinary
// size never wait: 32 of them reserve about 8 MiB.
func defaultBodyBudget() int64 {
	total := memTotal()
	if total <= 0 {
		return 64 << 20
	}
	return min(max(total/400, 32<<20), 256<<20)
}

// memTotal reads MemTotal from /proc/meminfo (0 when it cannot).
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
