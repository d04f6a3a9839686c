package handlers

import (
	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// NewFrontier returns the crawl's frontier as the spider's settings configure it
// (order, max_pages, frontier_window). seenCache < 0 disables the in-process seen cache;
// countUnread is for the embedded Redis (see streams.DispatcherConfig).
func NewFrontier(rdb redis.UniversalClient, sp *spiders.Spider, seenCache int, countUnread bool) (*streams.Frontier, error) {
	s := sp.Settings
	s.SetDefaults()
	return streams.NewFrontier(streams.FrontierConfig{
		Client: rdb, Keys: streams.NewKeys(sp.Name), SeenCache: seenCache,
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
	payload, err := spiders.MarshalRequest(r)
	if err != nil {
		return streams.Candidate{}, err
	}
	return streams.Candidate{Fingerprint: fp, Payload: payload, Priority: r.Priority, Depth: r.Depth}, nil
}
