package handlers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// partitionSpread returns which partitions each master of a Redis Cluster holds (every
// master, those holding none included), or nil for one Redis or a crawl of one
// partition.
func partitionSpread(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) (map[string][]int, error) {
	cc, ok := streams.AsCluster(rdb)
	if !ok || len(l.Parts) < 2 {
		return nil, nil
	}
	return inspect.PartitionMasters(ctx, cc, l)
}

// unevenSpread is how far above the mean the busiest master's partition count may be
// before logSpread warns: each partition's work is about the same, so the busiest master
// sets the crawl's ceiling (docs/operations/redis-cluster.md, "How many partitions").
const unevenSpread = 1.5

// logSpread logs how the crawl's partitions sit on the cluster's masters: a warning when
// the busiest master holds unevenSpread times the mean (at least 1) or more, else one
// line at INFO. It returns whether it warned. A crawl's partition tags spread it evenly
// over a cluster whose masters hold equal ranges of slots in order (streams.NewLayout);
// a resharded cluster, or a crawl created before, may not be.
func logSpread(log *zap.Logger, spread map[string][]int, partitions int) bool {
	if log == nil || len(spread) == 0 {
		return false
	}
	busiest := 0
	var each []string
	for _, addr := range slices.Sorted(maps.Keys(spread)) {
		ps := spread[addr]
		busiest = max(busiest, len(ps))
		each = append(each, fmt.Sprintf("%s: %v", addr, ps))
	}
	mean := max(float64(partitions)/float64(len(spread)), 1) // fewer partitions than masters: one each is even
	fields := []zap.Field{zap.Int("partitions", partitions), zap.Int("masters", len(spread)),
		zap.String("partitions_by_master", strings.Join(each, "; "))}
	if float64(busiest) >= unevenSpread*mean {
		log.Warn("the crawl's partitions are spread unevenly over the cluster's masters: the busiest one sets the crawl's ceiling; move a slot (redis-cli --cluster reshard) or reset the crawl with another partition count (docs/operations/redis-cluster.md: how many partitions)",
			append(fields, zap.Int("busiest_master_partitions", busiest), zap.Float64("mean", mean))...)
		return true
	}
	log.Info("the crawl's partitions over the cluster's masters", fields...)
	return false
}
