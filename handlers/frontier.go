package handlers

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// NewFrontier returns the crawl's frontier as the spider's settings configure it
// (order, max_pages, frontier_window, revisit_after, and the dedup: exact, bloom or set,
// with capacity and error_rate; a crawl keeps the dedup it started with). seenCache < 0
// disables the in-process seen cache; countUnread is for the embedded Redis (see
// streams.DispatcherConfig).
func NewFrontier(ctx context.Context, rdb redis.UniversalClient, sp *spiders.Spider, seenCache int, countUnread bool, log *zap.Logger) (*streams.Frontier, error) {
	s := sp.Settings
	s.SetDefaults()
	keys := streams.NewKeys(sp.Name)
	mode, err := streams.ParseDedupMode(s.Dedup)
	if err != nil {
		return nil, err
	}
	d, err := streams.OpenDeduper(ctx, rdb, keys, streams.DedupConfig{Mode: mode, Capacity: s.Capacity, ErrorRate: s.ErrorRate}, log)
	if err != nil {
		return nil, err
	}
	return streams.NewFrontier(streams.FrontierConfig{
		Client: rdb, Keys: keys, SeenCache: seenCache, Dedup: d,
		Order: streams.Order(s.Order), MaxRequests: s.MaxPages, Window: s.FrontierWindow, CountUnread: countUnread,
		Revisit: s.RevisitAfter,
	})
}

// CandidateFor encodes r for the frontier with its fingerprint (none for DontFilter).
func CandidateFor(r *spiders.Request) (streams.Candidate, error) { return candidate(r) }

func candidate(r *spiders.Request) (streams.Candidate, error) {
	var fp []byte
	if !r.DontFilter {
		sum, err := r.Fingerprint()
		if err != nil {
			return streams.Candidate{}, err
		}
		fp = sum[:]
	}
	return candidateWith(r, fp)
}

// candidateWith encodes r with its already computed fingerprint fp.
func candidateWith(r *spiders.Request, fp []byte) (streams.Candidate, error) {
	payload, err := spiders.MarshalRequest(r)
	if err != nil {
		return streams.Candidate{}, err
	}
	return streams.Candidate{Fingerprint: fp, Payload: payload, Priority: r.Priority, Depth: r.Depth}, nil
}
