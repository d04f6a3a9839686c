package frontier

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// SetBeforeRun sets the dispatcher's test fault hook: f is called before each dispatch
// script, and an error from it aborts the round there, as a process killed before the
// script ran. It exists in test builds only.
func (f *Frontier) SetBeforeRun(hook func(window int) error) { f.beforeRun = hook }

// SetClock sets the clock that turns a retry's due time into a wait (time.Now by
// default): a test gives two fetchers clocks that disagree. It exists in test builds
// only.
func (f *Frontier) SetClock(now func() time.Time) { f.now = now }

// Dispatch runs one dispatch round over every partition and returns how many requests
// it moved. It exists in test builds only (Run runs rounds).
func (f *Frontier) Dispatch(ctx context.Context) (int, error) {
	n, _, err := f.round(ctx, false)
	return n, err
}

// MoveDue moves up to max due retries of partition part back to their host queues and
// returns how many. It exists in test builds only (Run moves them).
func (f *Frontier) MoveDue(ctx context.Context, part, max int) (int, error) {
	return f.moveDue(ctx, part, max)
}

// DefaultHostQuantum is the default Config.Quantum, for the tests.
const DefaultHostQuantum = defaultQuantum

// QueuedOf returns host's waiting requests in partition k in the order they are handed
// out (best band first), as the requests stream carries them. It exists in test builds
// only.
func QueuedOf(ctx context.Context, rdb redis.UniversalClient, k streams.Keys, host string) ([]string, error) {
	st, err := rdb.HGetAll(ctx, k.HostState(host)).Result()
	if err != nil {
		return nil, err
	}
	var bands []int
	for f := range st {
		if b, err := strconv.Atoi(strings.TrimPrefix(f, "q")); err == nil && strings.HasPrefix(f, "q") {
			bands = append(bands, b)
		}
	}
	sort.Ints(bands)
	var out []string
	for _, b := range bands {
		es, err := rdb.LRange(ctx, k.HostQueue(host, b), 0, -1).Result()
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			out = append(out, ExpandEntry(host, e))
		}
	}
	return out, nil
}

// EntryOf is the entry of a candidate in its host's queue. It exists in test builds
// only.
func EntryOf(c Candidate) string { return entryOf(&c) }

// ExpandEntry is what expandLua makes of entry e of host's queue, in Go. It exists in
// test builds only.
func ExpandEntry(host, e string) string {
	if e == "" || e[0] >= entryKinds {
		return e
	}
	if e[0] == entryWhole {
		return e[1:]
	}
	scheme := "http://"
	if e[0] == entryHTTPS {
		scheme = "https://"
	}
	rest := e[1:]
	i := strings.IndexAny(rest, "/?")
	if i < 0 {
		i = len(rest)
	}
	head, rest := rest[:i], rest[i:]
	parts := strings.SplitN(head, ",", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	out := `{"v":1,"url":"` + scheme + host + rest + `"`
	if parts[2] != "" {
		out += `,"callback":"` + parts[2] + `"`
	}
	if parts[1] != "" {
		out += `,"priority":` + parts[1]
	}
	if parts[0] != "" {
		out += `,"depth":` + parts[0]
	}
	return out + "}"
}

// SetRevisitShift moves the revisit schedule's "now" ahead of the Redis clock by d, so
// a test simulates a day without waiting one. It exists in test builds only.
func (f *Frontier) SetRevisitShift(d time.Duration) {
	f.revisitShift = d
	f.revisits.wakeAll() // the schedule's "now" moved: Run looks again
}

// ReleaseDue releases up to max due revisits of partition part into their hosts'
// queues and returns how many. It exists in test builds only (Run releases them).
func (f *Frontier) ReleaseDue(ctx context.Context, part, max int) (int, error) {
	return f.releaseDue(ctx, part, max)
}

// PacedRound runs one dispatch round as Run does (see round): partitions left alone
// for their wait are skipped. It exists in test builds only.
func (f *Frontier) PacedRound(ctx context.Context) (int, error) {
	n, _, err := f.round(ctx, true)
	return n, err
}

// MoveAllDue runs one of Run's rounds over the delayed retries (see duePace). It exists
// in test builds only.
func (f *Frontier) MoveAllDue(ctx context.Context) error { return f.moveAllDue(ctx) }

// Revisits reads the revisit schedule of every partition (inspect.ReadRevisits) on the
// frontier's clock. It exists in test builds only.
func (f *Frontier) Revisits(ctx context.Context) (inspect.RevisitCounts, error) {
	return inspect.ReadRevisits(ctx, f.rdb, f.layout, f.revisitShift.Milliseconds())
}
