package handlers

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// What the external tests drive below Crawl.
var (
	// Run runs the stages of a Config (see runStages).
	Run = runStages
	// CandidateFor encodes a request for the frontier (see candidate).
	CandidateFor = candidate
)

// NewFrontier returns the crawl's frontier as Seed queues through it.
func NewFrontier(ctx context.Context, rdb redis.UniversalClient, sp *spiders.Spider) (*frontier.Frontier, error) {
	return newFrontier(ctx, rdb, sp, frontierUse{seeding: true}, nil)
}

// OpenLayout returns the crawl's layout (see openLayout).
func OpenLayout(ctx context.Context, rdb redis.UniversalClient, sp *spiders.Spider, log *zap.Logger) (streams.Layout, error) {
	return openLayout(ctx, rdb, sp, log)
}
