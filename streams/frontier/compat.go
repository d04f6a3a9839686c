package frontier

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/dedup"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// The names below stay until the callers outside streams/ follow the new API (one
// Frontier, one Config; keys and layout in package streams).

// Keys is streams.Keys.
type Keys = streams.Keys

// Layout is streams.Layout.
type Layout = streams.Layout

// NewKeys is streams.NewKeys.
func NewKeys(crawl string) Keys { return streams.NewKeys(crawl) }

// NewLayout is streams.NewLayout.
func NewLayout(crawl string, p int) Layout { return streams.NewLayout(crawl, p) }

// OpenLayout is streams.OpenLayout.
var OpenLayout = streams.OpenLayout

// ReadLayout is streams.ReadLayout.
var ReadLayout = streams.ReadLayout

// DeadOf is streams.DeadOf.
func DeadOf(stream string) string { return streams.DeadOf(stream) }

// SeedKey is Keys.Seeds.
func SeedKey(crawl string) string { return streams.NewKeys(crawl).Seeds() }

// SeedProcessingKey is Keys.SeedsProcessing.
func SeedProcessingKey(crawl string) string { return streams.NewKeys(crawl).SeedsProcessing() }

// NormalHost is the one name of a host ("name" or "name:port", as in a URL) that the
// crawl uses everywhere: partition, host queue, schedule, leases, limit rules and
// robots.txt cache. It lower-cases host and drops a port 80 or 443, so that
// Shop.example:80 and shop.example are one host.
func NormalHost(host string) string {
	host = strings.ToLower(host)
	if h, port, err := net.SplitHostPort(host); err == nil && (port == "80" || port == "443") {
		if strings.Contains(h, ":") {
			return "[" + h + "]"
		}
		return h
	}
	return host
}

// normalHost is NormalHost while callers pass hosts as in their URLs.
func normalHost(host string) string { return NormalHost(host) }

// Order is Config.Order.
type Order string

// Orders: see Config.Order.
const (
	OrderPriority     Order = "priority"
	OrderBreadthFirst Order = "breadth-first"
	OrderDepthFirst   Order = "depth-first"
)

// Validate reports an unknown order.
func (o Order) Validate() error { return order(cmpOr(string(o), "priority")).validate() }

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// MaxHostBackoff bounds how long a host is pushed back after repeated 429/503.
const MaxHostBackoff = maxHostBackoff

// Defaults of HostDefaults.
const (
	DefaultLeaseTTL    = defaultLeaseTTL
	DefaultHostQuantum = defaultQuantum
)

// HostDefaults is the politeness of every host without a rule of its own (Config.Hosts,
// LeaseTTL, Quantum; HandOutWindow above 0 sets Window and FinishHandsOut).
type HostDefaults struct {
	HostRule
	LeaseTTL      time.Duration
	Quantum       int
	HandOutWindow int
	CountUnread   bool
}

func (d HostDefaults) config(rdb redis.UniversalClient, l Layout, o Order) Config {
	return Config{Client: rdb, Layout: l, Order: string(o), Hosts: d.HostRule, LeaseTTL: d.LeaseTTL, Quantum: d.Quantum,
		Window: d.HandOutWindow, FinishHandsOut: d.HandOutWindow > 0, CountUnread: d.CountUnread}
}

// FrontierConfig configures NewFrontier (see Config).
type FrontierConfig struct {
	Client      redis.UniversalClient
	Layout      Layout
	Keys        Keys
	SeenCache   int
	Order       Order
	MaxRequests int64
	Window      int
	CountUnread bool
	Dedup       *dedup.Deduper
	Revisit     time.Duration
	Linger      time.Duration
	Hosts       HostDefaults
	Rules       func(host string) *HostRule
}

// NewFrontier is New for the emit side (Window above 0 sets EmitHandsOut).
func NewFrontier(cfg FrontierConfig) (*Frontier, error) {
	if cfg.Layout.N() == 0 {
		cfg.Layout = NewLayout(cfg.Keys.Crawl(), 1)
	}
	c := Config{Client: cfg.Client, Layout: cfg.Layout, Order: string(cfg.Order), Hosts: cfg.Hosts.HostRule,
		LeaseTTL: cfg.Hosts.LeaseTTL, Quantum: cfg.Hosts.Quantum, Window: cfg.Window, EmitHandsOut: cfg.Window > 0,
		CountUnread: cfg.CountUnread, MaxRequests: cfg.MaxRequests, Revisit: cfg.Revisit, Dedup: cfg.Dedup,
		SeenCache: cfg.SeenCache, Linger: cfg.Linger, Rules: cfg.Rules}
	return New(c)
}

// Client returns the Redis client of the frontier.
func (f *Frontier) Client() redis.UniversalClient { return f.rdb }

// Layout returns the crawl's layout.
func (f *Frontier) Layout() Layout { return f.layout }

// EmitFrom is Emit.
func (f *Frontier) EmitFrom(ctx context.Context, part int, cands []Candidate, items []ItemOut) (Emitted, error) {
	return f.Emit(ctx, part, cands, items)
}

// Hosts is the fetchers' side of a Frontier (Finish, Leased, SetCrawlDelay).
type Hosts struct{ *Frontier }

// NewHosts returns a Frontier for its fetchers' side.
func NewHosts(rdb redis.UniversalClient, layout Layout, defaults HostDefaults, o Order) (*Hosts, error) {
	f, err := New(defaults.config(rdb, layout, o))
	if err != nil {
		return nil, err
	}
	return &Hosts{f}, nil
}

// Delayed is the retries of a Frontier.
type Delayed struct {
	// Interval is how often Run moves due requests.
	Interval time.Duration
	// Logger receives Run's failures.
	Logger *zap.Logger
	f      *Frontier
}

// NewDelayed returns a Frontier for its retries.
func NewDelayed(rdb redis.UniversalClient, layout Layout, o Order, defaults HostDefaults) (*Delayed, error) {
	f, err := New(defaults.config(rdb, layout, o))
	if err != nil {
		return nil, err
	}
	return &Delayed{Interval: defaultRetryInterval, f: f}, nil
}

// Schedule is Frontier.Retry.
func (d *Delayed) Schedule(ctx context.Context, host string, priority, depth int, payload []byte, due time.Time) error {
	return d.f.Retry(ctx, host, priority, depth, payload, due)
}

// Run moves due retries every Interval until ctx ends.
func (d *Delayed) Run(ctx context.Context) error {
	return loop.Every(ctx, d.Interval, loop.Config{Log: d.Logger, Msg: "moving delayed requests failed; retrying"}, d.f.moveAllDue)
}

// Close closes the Frontier.
func (d *Delayed) Close() { d.f.Close() }

// DispatcherConfig configures NewDispatcher (see Config).
type DispatcherConfig struct {
	Client       redis.UniversalClient
	Layout       Layout
	Keys         Keys
	Window       int
	Interval     time.Duration
	IdleInterval time.Duration
	CountUnread  bool
	Hosts        HostDefaults
	Logger       *zap.Logger
}

// Dispatcher is the dispatch loop of a Frontier.
type Dispatcher struct{ f *Frontier }

// NewDispatcher returns a Frontier for its dispatch loop.
func NewDispatcher(cfg DispatcherConfig) (*Dispatcher, error) {
	if cfg.Layout.N() == 0 {
		cfg.Layout = NewLayout(cfg.Keys.Crawl(), 1)
	}
	c := cfg.Hosts.config(cfg.Client, cfg.Layout, "")
	c.Window, c.FinishHandsOut, c.Interval, c.IdleInterval, c.CountUnread, c.Logger = cfg.Window, false, cfg.Interval, cfg.IdleInterval, cfg.CountUnread, cfg.Logger
	f, err := New(c)
	if err != nil {
		return nil, err
	}
	return &Dispatcher{f}, nil
}

// Run dispatches until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) error { return d.f.runDispatch(ctx) }

// Seeds takes the seeds pushed at runtime.
type Seeds struct{ f *Frontier }

// Seed is one runtime seed as pushed.
type Seed struct {
	Raw   string
	entry string
}

// NewSeeds returns the runtime seeds of crawl.
func NewSeeds(rdb redis.UniversalClient, crawl string) *Seeds {
	f, _ := New(Config{Client: rdb, Layout: streams.NewLayout(crawl, 1)})
	return &Seeds{f}
}

// Take returns up to n new seeds, plus seeds abandoned in processing for over a minute.
func (s *Seeds) Take(ctx context.Context, n int) ([]Seed, error) {
	got, err := s.f.takeSeeds(ctx, n)
	out := make([]Seed, len(got))
	for i, g := range got {
		out[i] = Seed{Raw: g.raw, entry: g.entry}
	}
	return out, err
}

// Done removes seeds from processing once they are queued.
func (s *Seeds) Done(ctx context.Context, seeds []Seed) error {
	in := make([]seed, len(seeds))
	for i, sd := range seeds {
		in[i] = seed{raw: sd.Raw, entry: sd.entry}
	}
	return s.f.seedsDone(ctx, in)
}

// MigrateFrontier is Migrate.
func MigrateFrontier(ctx context.Context, rdb redis.UniversalClient, l Layout, defaults HostDefaults, o Order,
	hostOf func(payload []byte) (string, error)) (int, error) {
	return Migrate(ctx, defaults.config(rdb, l, o), hostOf)
}
