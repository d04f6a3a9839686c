package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// aliveIdle is how recently a consumer must have read or claimed entries to count as
// alive: every running stage claims (XAUTOCLAIM) at least every claim interval (default
// 5 s), and a consumer that stops cleanly leaves its groups.
const aliveIdle = 15 * time.Second

// ErrRunning is matched (errors.Is) by the error Reset returns while services of the
// crawl are alive.
var ErrRunning = errors.New("inspect: crawl is running")

// Consumer is a consumer of one of a crawl's consumer groups.
type Consumer struct {
	// Stream is the stream it reads, Group its group there.
	Stream, Group string
	// Name is the consumer's name (a process slot: fetch-1, host-pid).
	Name string
	// Idle is how long ago it last read or claimed entries.
	Idle time.Duration
	// Pending is how many entries it holds without an ack.
	Pending int64
}

// Alive returns the consumers of every group of the crawl's streams (its stages,
// archivers and post-processors, in every partition) that read or claimed entries
// within the last 15 s: the crawl's services that are running.
func Alive(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) ([]Consumer, error) {
	var out []Consumer
	for _, k := range l.Parts {
		for _, sg := range stages(k) {
			groups, err := rdb.XInfoGroups(ctx, sg.Stream).Result()
			if err != nil {
				if rkit.IsNoSuchKey(err) {
					continue
				}
				return out, fmt.Errorf("inspect: groups of %s: %w", sg.Stream, err)
			}
			for _, g := range groups {
				cs, err := rdb.XInfoConsumers(ctx, sg.Stream, g.Name).Result()
				if err != nil {
					return out, fmt.Errorf("inspect: consumers of %s group %s: %w", sg.Stream, g.Name, err)
				}
				for _, c := range cs {
					if c.Idle < aliveIdle {
						out = append(out, Consumer{Stream: sg.Stream, Group: g.Name, Name: c.Name, Idle: c.Idle, Pending: c.Pending})
					}
				}
			}
		}
	}
	return out, nil
}

// runningError is the error of a crawl whose services are alive.
func runningError(crawl string, alive []Consumer) error {
	names := make([]string, 0, len(alive))
	for _, c := range alive {
		names = append(names, fmt.Sprintf("%s (group %s, active %s ago)", c.Name, c.Group, c.Idle.Round(time.Second)))
	}
	return fmt.Errorf("%w: crawl %s has services alive: %s; stop them first (a process killed without stopping counts as alive for %s)",
		ErrRunning, crawl, strings.Join(names, ", "), aliveIdle)
}
