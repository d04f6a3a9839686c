package frontier

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams/dedup"
)

// The request dedup moved to package streams/dedup; these names stay until the
// callers outside streams/ follow.

// Deduper is dedup.Deduper.
type Deduper = dedup.Deduper

// DedupConfig is dedup.Config.
type DedupConfig = dedup.Config

// DedupMode is dedup.Mode.
type DedupMode = dedup.Mode

// DedupUsage is dedup.Usage.
type DedupUsage = dedup.Usage

// Dedup modes: see package dedup.
const (
	DedupExact            = dedup.Exact
	DedupBloom            = dedup.Bloom
	DedupSet              = dedup.Set
	DefaultDedupErrorRate = dedup.DefaultErrorRate
)

// ParseDedupMode is dedup.ParseMode.
var ParseDedupMode = dedup.ParseMode

// OpenLayoutDeduper is dedup.Open.
var OpenLayoutDeduper = dedup.Open

// DeleteSeen is dedup.Delete.
var DeleteSeen = dedup.Delete

// OpenDeduper is dedup.Open for a crawl of one partition.
func OpenDeduper(ctx context.Context, rdb redis.UniversalClient, keys Keys, cfg DedupConfig, log *zap.Logger) (*Deduper, error) {
	return dedup.Open(ctx, rdb, NewLayout(keys.Crawl(), 1), cfg, log)
}
