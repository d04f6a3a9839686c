package handlers

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/fetch"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// frontierUse says what a frontier from newFrontier serves.
type frontierUse struct {
	// seeding: it queues seeds only (Seed, the seed poller), URLs new or few, so it
	// keeps no in-process cache of seen URLs.
	seeding bool
	// countUnread: its hand-outs count unread requests with XRANGE rather than trust
	// XINFO's lag, which the embedded Redis reports wrongly (see
	// frontier.DispatcherConfig).
	countUnread bool
}

// newFrontier returns the crawl's frontier as the spider's settings configure it
// (order, max_pages, frontier_window, revisit_after, and the dedup: exact, bloom or set,
// with capacity and error_rate; a crawl keeps the dedup it started with), for use.
func newFrontier(ctx context.Context, rdb redis.UniversalClient, sp *spiders.Spider, use frontierUse, log *zap.Logger) (*frontier.Frontier, error) {
	s := sp.Settings
	s.SetDefaults()
	layout, err := openLayout(ctx, rdb, sp, log)
	if err != nil {
		return nil, err
	}
	mode, err := frontier.ParseDedupMode(s.Dedup)
	if err != nil {
		return nil, err
	}
	d, err := frontier.OpenLayoutDeduper(ctx, rdb, layout, frontier.DedupConfig{Mode: mode, Capacity: s.Capacity, ErrorRate: s.ErrorRate}, log)
	if err != nil {
		return nil, err
	}
	seenCache := 0 // the frontier's default
	if use.seeding {
		seenCache = -1 // none
	}
	return frontier.NewFrontier(frontier.FrontierConfig{
		Client: rdb, Layout: layout, SeenCache: seenCache, Dedup: d,
		Order: frontier.Order(s.Order), MaxRequests: s.MaxPages, Window: s.FrontierWindow, CountUnread: use.countUnread,
		Revisit: s.RevisitAfter, Hosts: fetch.HostDefaults(s), Rules: fetch.HostRules(s),
	})
}

// openLayout returns the crawl's layout: the partitions stored for it, or the spider's
// partitions setting for a new crawl (with a warning when they differ). A frontier from
// before host queues is moved into them.
func openLayout(ctx context.Context, rdb redis.UniversalClient, sp *spiders.Spider, log *zap.Logger) (frontier.Layout, error) {
	want := max(sp.Settings.Partitions, 1)
	l, differs, err := frontier.OpenLayout(ctx, rdb, sp.Name, want)
	if err != nil {
		return frontier.Layout{}, err
	}
	if differs && log != nil {
		log.Warn("crawl keeps the partitions it started with; reset the crawl to change them",
			zap.Int("stored", l.N()), zap.Int("asked", want))
	}
	s := sp.Settings
	s.SetDefaults()
	n, err := frontier.MigrateFrontier(ctx, rdb, l, fetch.HostDefaults(s), frontier.Order(s.Order), requestHost)
	if err != nil {
		return frontier.Layout{}, err
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

// candidate encodes r for the frontier with its fingerprint (none for DontFilter).
func candidate(r *spiders.Request) (frontier.Candidate, error) {
	var fp []byte
	if !r.DontFilter {
		sum, err := r.Fingerprint()
		if err != nil {
			return frontier.Candidate{}, err
		}
		fp = sum[:]
	}
	return candidateWith(r, fp)
}

// candidateWith encodes r with its already computed fingerprint fp.
func candidateWith(r *spiders.Request, fp []byte) (frontier.Candidate, error) {
	payload, err := spiders.MarshalRequest(r)
	if err != nil {
		return frontier.Candidate{}, err
	}
	return frontier.Candidate{Fingerprint: fp, Payload: payload, Priority: r.Priority, Depth: r.Depth, Host: spiders.HostKey(r.URL)}, nil
}
