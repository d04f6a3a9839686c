package inspect

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// ListCrawls returns the names of the crawls in Redis (those with a meta hash: seeded,
// or opened by a stage), sorted: a SCAN of every master for sc:{*}:meta, for tools a
// person runs (not the data path).
func ListCrawls(ctx context.Context, rdb redis.UniversalClient) ([]string, error) {
	seen := map[string]bool{}
	err := rkit.ScanKeys(ctx, rdb, "sc:{*}:meta", func(keys []string) error {
		for _, k := range keys {
			name, ok := strings.CutPrefix(k, "sc:{")
			if name, ok2 := strings.CutSuffix(name, "}:meta"); ok && ok2 && name != "" && !strings.Contains(name, ":") {
				seen[name] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("inspect: list crawls: %w", err)
	}
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}
