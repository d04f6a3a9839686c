package handlers

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// RunConfig is a process's run of its stages (runConfig), which the external tests
// build directly to drive a run below Crawl.
type RunConfig = runConfig

// What the external tests drive below Crawl.
var (
	// Run runs the stages of a RunConfig (see runStages).
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

// FieldCheck is the parse stage's look at a page's items (see fieldCheck).
type FieldCheck struct{ c *fieldCheck }

// NewFieldCheck returns the field check of sp's crawl, recording warnings in meta.
func NewFieldCheck(sp *spiders.Spider, rdb redis.UniversalClient, meta string, counters *streams.Counters, log *zap.Logger) FieldCheck {
	return FieldCheck{newFieldCheck(sp, rdb, meta, counters, log)}
}

// Page counts one page's items and returns those kept.
func (f FieldCheck) Page(ctx context.Context, items []spiders.Item) []spiders.Item {
	return f.c.page(ctx, items)
}
