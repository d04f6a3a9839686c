// Package fleet keeps the crawls a fleet of workers serves: each crawl registered in
// Redis with its spider (YAML, data only, or the name of a Go spider compiled into the
// workers), its state and its weight, so that long-lived `streamcrawl worker` processes
// serve every active crawl and `submit`, `pause`, `resume`, `cancel` and `delete` steer
// them from anywhere.
//
// The registry is a handful of keys under one hash tag, {fleet}, so that each change is
// one script on one slot of a Redis Cluster: a SET of crawl names, a hash per crawl and a
// generation counter that every change bumps (workers read the whole registry only when
// it moved). A crawl's own keys (streams, frontier, counters) stay where they were, under
// the crawl's tag.
package fleet

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// State is where a crawl is in its life.
type State string

// The states of a crawl. A submitted crawl is queued (scheduled when it has a
// schedule); the first worker that serves it makes it running; it ends done (the crawl
// finished), failed (it ended with an error: LastError says which) or cancelled. A paused
// crawl keeps its state in Redis and is served by nobody until resumed. A deleting crawl
// is being stopped by the workers before its keys are removed.
const (
	Queued    State = "queued"
	Running   State = "running"
	Paused    State = "paused"
	Scheduled State = "scheduled"
	Done      State = "done"
	Failed    State = "failed"
	Cancelled State = "cancelled"
	Deleting  State = "deleting"
	// Resetting is a scheduled crawl between two runs: the worker that started the run
	// for a tick keeps the last run's figures and deletes its keys, then queues it.
	Resetting State = "resetting"
)

// Active reports whether workers serve a crawl in state s.
func (s State) Active() bool { return s == Queued || s == Running }

// ErrUnknownCrawl is matched (errors.Is) by the error of a call naming a crawl that is
// not registered.
var ErrUnknownCrawl = errors.New("fleet: no such crawl")

// ErrState is matched (errors.Is) by the error of a change the crawl's state does not
// allow (resume of a crawl that is not paused, a submit to a crawl being deleted).
var ErrState = errors.New("fleet: not allowed in the crawl's state")

// Crawl is one registered crawl as the registry holds it.
type Crawl struct {
	// Name is the crawl's name: its spider's name.
	Name string `json:"name"`
	// State is where the crawl is (see the State constants).
	State State `json:"state"`
	// Version counts the submits of the crawl; workers serve the newest.
	Version int64 `json:"version"`
	// Weight is the crawl's share of each worker's concurrency against the other active
	// crawls' (1 and up).
	Weight int `json:"weight"`
	// GoSpider names a Go spider of the workers' registry; empty for a YAML spider.
	GoSpider string `json:"go_spider,omitempty"`
	// Continuous says the crawl revisits its pages: its idle window
	// (inspect.Continuous.IdleWindow), NoIdleWindow for none, 0 for a crawl that ends;
	// Mode reads it.
	Continuous time.Duration `json:"continuous,omitempty"`
	// Schedule is the crawl's cron schedule; empty: it runs once.
	Schedule string `json:"schedule,omitempty"`
	// Runs counts the crawl's runs started (a scheduled crawl's ticks).
	Runs int64 `json:"runs"`
	// LastTick is the schedule tick the last run started for (Unix ms; 0: none).
	LastTick int64 `json:"last_tick,omitempty"`
	// SubmittedAt is when the newest version was submitted, ChangedAt when the state
	// last changed.
	SubmittedAt time.Time `json:"submitted_at"`
	ChangedAt   time.Time `json:"changed_at"`
	// LastError is why the crawl failed (or the last run did), empty otherwise.
	LastError string `json:"last_error,omitempty"`
}

// Submission is what Submit registers.
type Submission struct {
	// Name is the crawl's name (spiders.ValidateName).
	Name string
	// Spider is the YAML spider's text; empty when GoSpider names a Go spider.
	Spider []byte
	// GoSpider names a Go spider compiled into the workers (see Register).
	GoSpider string
	// Weight is the crawl's share of the workers' concurrency; 0 means 1.
	Weight int
	// Continuous is the revisit window of a continuous crawl; 0: a crawl that ends.
	Continuous time.Duration
	// Schedule is a cron schedule (ParseSchedule); empty: the crawl runs at once.
	Schedule string
}

// Keys of the registry, all under the {fleet} hash tag.
const (
	crawlsKey = "sc:{fleet}:crawls" // SET of crawl names
	genKey    = "sc:{fleet}:gen"    // counter bumped by every change
	crawlPre  = "sc:{fleet}:crawl:" // HASH per crawl, see the fields below
)

// crawlKey is the hash of crawl name.
func crawlKey(name string) string { return crawlPre + name }

// Registry reads and changes the registered crawls.
type Registry struct {
	rdb redis.UniversalClient
	now func() time.Time
}

// New returns the registry kept in rdb.
func New(rdb redis.UniversalClient) *Registry { return &Registry{rdb: rdb, now: time.Now} }

var (
	//go:embed submit.lua
	submitLua    string
	submitScript = redis.NewScript(submitLua)
	//go:embed transition.lua
	transitionLua    string
	transitionScript = redis.NewScript(transitionLua)
	//go:embed startrun.lua
	startRunLua    string
	startRunScript = redis.NewScript(startRunLua)
)

// Submit registers s as a new crawl, or as the next version of a registered one (a
// running crawl's workers move to it between messages: see Serve). It refuses a
// crawl being deleted. It returns the crawl as registered.
func (r *Registry) Submit(ctx context.Context, s Submission) (Crawl, error) {
	if err := spiders.ValidateName(s.Name); err != nil {
		return Crawl{}, err
	}
	if (len(s.Spider) == 0) == (s.GoSpider == "") {
		return Crawl{}, fmt.Errorf("fleet: submit %s: give a YAML spider or a Go spider's name, one of them", s.Name)
	}
	if s.Weight < 0 || s.Weight > maxWeight {
		return Crawl{}, fmt.Errorf("fleet: submit %s: weight %d out of range 1-%d", s.Name, s.Weight, maxWeight)
	}
	if s.Schedule != "" {
		if _, err := ParseSchedule(s.Schedule); err != nil {
			return Crawl{}, fmt.Errorf("fleet: submit %s: %w", s.Name, err)
		}
	}
	first := Queued
	if s.Schedule != "" {
		first = Scheduled
	}
	err := submitScript.Run(ctx, r.rdb, []string{crawlsKey, genKey, crawlKey(s.Name)},
		s.Name, string(s.Spider), s.GoSpider, max(1, s.Weight), s.Continuous.Milliseconds(), s.Schedule,
		string(first), r.now().UnixMilli()).Err()
	if err != nil {
		return Crawl{}, scriptError("submit", s.Name, err)
	}
	return r.Get(ctx, s.Name)
}

// maxWeight bounds a crawl's weight.
const maxWeight = 1000

// Transition moves crawl name from one of the states from to state to (any state when
// from is empty), noting lastErr (kept until the next change that gives one). It
// returns the state the crawl was in; an error matching ErrUnknownCrawl or ErrState when
// the crawl is not registered or not in one of from.
func (r *Registry) Transition(ctx context.Context, name string, from []State, to State, lastErr string) (State, error) {
	args := []any{string(to), lastErr, r.now().UnixMilli()}
	for _, s := range from {
		args = append(args, string(s))
	}
	res, err := transitionScript.Run(ctx, r.rdb, []string{genKey, crawlKey(name)}, args...).Text()
	if err != nil {
		return "", scriptError(string(to), name, err)
	}
	return State(res), nil
}

// scriptError turns a script's refusal into an error matching ErrUnknownCrawl or
// ErrState.
func scriptError(what, name string, err error) error {
	msg := err.Error()
	switch {
	case len(msg) > 8 && msg[:8] == "UNKNOWN ":
		return fmt.Errorf("fleet: %s %s: %w", what, name, ErrUnknownCrawl)
	case len(msg) > 6 && msg[:6] == "STATE ":
		return fmt.Errorf("fleet: %s %s: the crawl is %s: %w", what, name, msg[6:], ErrState)
	}
	return fmt.Errorf("fleet: %s %s: %w", what, name, err)
}

// Gen returns the registry's generation: it moves with every change, so a worker reads
// the registry again only when it moved.
func (r *Registry) Gen(ctx context.Context) (int64, error) {
	n, err := r.rdb.Get(ctx, genKey).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// listFields are the fields List reads (the spider's text is read by Spider).
var listFields = []string{"state", "version", "weight", "go", "continuous", "schedule", "runs", "last_tick",
	"submitted_at", "changed_at", "last_error"}

// List returns every registered crawl, sorted by name.
func (r *Registry) List(ctx context.Context) ([]Crawl, error) {
	names, err := r.rdb.SMembers(ctx, crawlsKey).Result()
	if err != nil {
		return nil, fmt.Errorf("fleet: list crawls: %w", err)
	}
	slices.Sort(names)
	pipe := r.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(names))
	for i, n := range names {
		cmds[i] = pipe.HMGet(ctx, crawlKey(n), listFields...)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("fleet: list crawls: %w", err)
	}
	out := make([]Crawl, 0, len(names))
	for i, n := range names {
		v := cmds[i].Val()
		if v[0] == nil {
			continue // removed between the two reads
		}
		out = append(out, decodeCrawl(n, v))
	}
	return out, nil
}

// Get returns crawl name, or an error matching ErrUnknownCrawl.
func (r *Registry) Get(ctx context.Context, name string) (Crawl, error) {
	v, err := r.rdb.HMGet(ctx, crawlKey(name), listFields...).Result()
	if err != nil {
		return Crawl{}, fmt.Errorf("fleet: crawl %s: %w", name, err)
	}
	if v[0] == nil {
		return Crawl{}, fmt.Errorf("fleet: crawl %s: %w", name, ErrUnknownCrawl)
	}
	return decodeCrawl(name, v), nil
}

// Spider returns the YAML text of crawl name's spider and its version (empty text for a
// Go spider).
func (r *Registry) Spider(ctx context.Context, name string) ([]byte, int64, error) {
	v, err := r.rdb.HMGet(ctx, crawlKey(name), "spider", "version").Result()
	if err != nil {
		return nil, 0, fmt.Errorf("fleet: spider of %s: %w", name, err)
	}
	if v[1] == nil {
		return nil, 0, fmt.Errorf("fleet: spider of %s: %w", name, ErrUnknownCrawl)
	}
	text, _ := v[0].(string)
	return []byte(text), atoi(v[1]), nil
}

// Remove unregisters crawl name (its own keys are inspect.Reset's to delete).
func (r *Registry) Remove(ctx context.Context, name string) error {
	pipe := r.rdb.TxPipeline()
	pipe.SRem(ctx, crawlsKey, name)
	pipe.Del(ctx, crawlKey(name))
	pipe.Incr(ctx, genKey)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("fleet: remove %s: %w", name, err)
	}
	return nil
}

// decodeCrawl reads the fields of listFields.
func decodeCrawl(name string, v []any) Crawl {
	str := func(i int) string { s, _ := v[i].(string); return s }
	ms := func(i int) time.Time {
		if n := atoi(v[i]); n > 0 {
			return time.UnixMilli(n)
		}
		return time.Time{}
	}
	return Crawl{Name: name, State: State(str(0)), Version: atoi(v[1]), Weight: int(max(1, atoi(v[2]))),
		GoSpider: str(3), Continuous: time.Duration(atoi(v[4])) * time.Millisecond, Schedule: str(5),
		Runs: atoi(v[6]), LastTick: atoi(v[7]), SubmittedAt: ms(8), ChangedAt: ms(9), LastError: str(10)}
}

// atoi reads an integer field (0 when absent or not a number).
func atoi(v any) int64 {
	s, _ := v.(string)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
