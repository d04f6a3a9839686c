package inspect

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
)

// RenderStatus is what render: auto decided for one page type (streams.Keys.Render).
type RenderStatus struct {
	// PageType is the type (a YAML spider's follow rule, "follow[i]", or a callback).
	PageType string `json:"page_type"`
	// Mode is "http" (plain HTTP yields what the browser does), "browser", or ""
	// while the type is still learning.
	Mode string `json:"mode"`
	// Samples counts pages fetched both ways while learning; Same those where plain
	// HTTP gave the same items and links.
	Samples int64 `json:"samples"`
	Same    int64 `json:"same"`
	// Checks counts pages fetched both ways again after an "http" decision; Diverged
	// those that differed (which sent the type to the browser).
	Checks   int64 `json:"checks"`
	Diverged int64 `json:"diverged"`
}

// readRender returns the render: auto decision of each page type of the crawl, sorted
// by type; none when the crawl does not render adaptively. The hash has a handful of
// fields per type: reading it is O(page types).
func readRender(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) ([]RenderStatus, error) {
	h, err := rdb.HGetAll(ctx, l.Global.Render).Result()
	if err != nil {
		return nil, fmt.Errorf("inspect: render decisions: %w", err)
	}
	by := map[string]*RenderStatus{}
	for f, v := range h {
		i := strings.LastIndexByte(f, '|')
		if i < 0 {
			continue
		}
		typ, field := f[:i], f[i+1:]
		r := by[typ]
		if r == nil {
			r = &RenderStatus{PageType: typ}
			by[typ] = r
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		switch field {
		case "mode":
			r.Mode = v
		case "samples":
			r.Samples = n
		case "same":
			r.Same = n
		case "checks":
			r.Checks = n
		case "diverged":
			r.Diverged = n
		}
	}
	out := make([]RenderStatus, 0, len(by))
	for _, r := range by {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PageType < out[j].PageType })
	return out, nil
}
