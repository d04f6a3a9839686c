package handlers

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/fetch"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/dedup"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// frontierUse says what a frontier from newFrontier serves.
type frontierUse struct {
	// seeding: it queues seeds only (Seed, the seed poller), URLs new or few, so it
	// keeps no in-process cache of seen URLs.
	seeding bool
	// countUnread: its hand-outs count unread requests with XRANGE rather than trust
	// XINFO's lag, which the embedded Redis reports wrongly (see
	// frontier.Config.CountUnread).
	countUnread bool
	// log receives the frontier's failures (its Run's); nil means none.
	log *zap.Logger
}

// newFrontier returns the crawl's frontier as the spider's settings configure it
// (order, max_pages, frontier_window, revisit.after, and the dedup: exact, bloom or set,
// with capacity, error_rate and revisit.forget_after; a crawl keeps the dedup it started with), for use.
func newFrontier(ctx context.Context, rdb redis.UniversalClient, sp *spiders.Spider, use frontierUse, log *zap.Logger) (*frontier.Frontier, error) {
	s := sp.Settings
	s.SetDefaults()
	layout, err := openLayout(ctx, rdb, sp, log)
	if err != nil {
		return nil, err
	}
	d, err := dedup.Open(ctx, rdb, layout, dedup.Config{Mode: dedup.Mode(s.Dedup), Capacity: s.Capacity, ErrorRate: s.ErrorRate,
		ExpireAfter: s.Revisit.ForgetAfter}, log)
	if err != nil {
		return nil, err
	}
	cfg := frontierConfig(rdb, layout, s)
	cfg.Dedup, cfg.CountUnread, cfg.Logger = d, use.countUnread, use.log
	if use.seeding {
		cfg.SeenCache = -1 // none
	}
	return frontier.New(cfg)
}

// frontierConfig is the crawl's frontier as the spider's settings s configure it: its
// order, max_pages, revisit.after, budget and per-host politeness, and the frontier window,
// which emits and finished fetches hand requests out within as the dispatcher does.
func frontierConfig(rdb redis.UniversalClient, layout streams.Layout, s spiders.Settings) frontier.Config {
	cfg := frontier.Config{Client: rdb, Layout: layout, Order: s.Order, MaxRequests: s.MaxPages, Revisit: s.Revisit.After, RevisitURLs: s.Capacity,
		Window: s.FrontierWindow, EmitHandsOut: true, FinishHandsOut: true, Budget: hostBudget(s.Budget)}
	fetch.Politeness(s, &cfg)
	return cfg
}

// openLayout returns the crawl's layout: the partitions stored for it, or the spider's
// partitions setting for a new crawl (with a warning when they differ), once the
// spider has claimed the crawl (claimCrawl: another spider's crawl is an error). A
// frontier from before host queues is moved into them.
func openLayout(ctx context.Context, rdb redis.UniversalClient, sp *spiders.Spider, log *zap.Logger) (streams.Layout, error) {
	want := max(sp.Settings.Partitions, 1)
	l, differs, err := streams.OpenLayout(ctx, rdb, sp.Name, want)
	if err != nil {
		return streams.Layout{}, err
	}
	if differs && log != nil {
		log.Warn("crawl keeps the partitions it started with; reset the crawl to change them",
			zap.Int("stored", len(l.Parts)), zap.Int("asked", want))
	}
	if err := claimCrawl(ctx, rdb, l, sp); err != nil {
		return streams.Layout{}, err
	}
	if err := checkFingerprintRules(ctx, rdb, l, sp, log); err != nil {
		return streams.Layout{}, err
	}
	s := sp.Settings
	s.SetDefaults()
	n, err := frontier.Migrate(ctx, frontierConfig(rdb, l, s), requestHost)
	if err != nil {
		return streams.Layout{}, err
	}
	if n > 0 && log != nil {
		log.Info("moved the requests of a frontier from before host queues into their hosts' queues", zap.Int("requests", n))
	}
	return l, nil
}

// requestHost returns the host key of an encoded request.
func requestHost(payload []byte) (string, error) {
	r, err := spiders.UnmarshalRequest(payload)
	if err != nil {
		return "", err
	}
	return spiders.HostKey(r.URL), nil
}

// candidate encodes r for the frontier with its fingerprint as the spider sp keys it
// (spiders.Spider.RequestFingerprint: none for DontFilter).
func candidate(sp *spiders.Spider, r *spiders.Request) (frontier.Candidate, error) {
	fp, err := sp.RequestFingerprint(r)
	if err != nil {
		return frontier.Candidate{}, err
	}
	return candidateWith(r, fp)
}

// candidateWith encodes r with its already computed fingerprint fp. A request with no
// field besides its URL, callback, priority and depth goes as such (the frontier keeps
// it compact and writes its JSON itself); any other is encoded here.
func candidateWith(r *spiders.Request, fp []byte) (frontier.Candidate, error) {
	c := frontier.Candidate{Fingerprint: fp, Priority: r.Priority, Depth: r.Depth, Host: spiders.HostKey(r.URL)}
	if r.Plain() {
		c.URL, c.Callback = r.URL, r.Callback
		return c, nil
	}
	payload, err := spiders.MarshalRequest(r)
	if err != nil {
		return frontier.Candidate{}, err
	}
	c.Payload = payload
	return c, nil
}
