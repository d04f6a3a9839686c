package inspect

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
)

// continuousField is the field of the crawl's meta hash that holds its continuous mode:
// the idle window in ms ("0": none). Absent: the crawl is one pass.
const continuousField = "continuous"

// Continuous is a crawl's continuous mode. It lives in Redis, in the crawl's meta hash,
// so that every process of the crawl (each stage's --until-done, post-processors,
// archivers) and `status` apply the same rule to "done" (Progress.Done): a continuous
// crawl is not done while a revisit is scheduled within its idle window.
type Continuous struct {
	// On makes the crawl continuous; off (the default) it is one pass, done once the
	// frontier is empty, whatever revisits are scheduled.
	On bool `json:"on"`
	// IdleWindow lets a continuous crawl be done when, besides having nothing else to
	// do, its next revisit is due further off than this (a run with --until-done then
	// stops; the revisits stay scheduled for the next run). 0: no window, the crawl is
	// never done while any revisit is scheduled.
	IdleWindow time.Duration `json:"idle_window,omitempty"`
}

// SetContinuous records the crawl's continuous mode (off: removes it).
func SetContinuous(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, c Continuous) error {
	var err error
	if c.On {
		err = rdb.HSet(ctx, l.Global.Meta, continuousField, max(c.IdleWindow.Milliseconds(), 0)).Err()
	} else {
		err = rdb.HDel(ctx, l.Global.Meta, continuousField).Err()
	}
	if err != nil {
		return fmt.Errorf("inspect: set continuous mode: %w", err)
	}
	return nil
}

// readContinuous reads the crawl's continuous mode.
func readContinuous(ctx context.Context, rdb redis.UniversalClient, l streams.Layout) (Continuous, error) {
	v, err := rdb.HGet(ctx, l.Global.Meta, continuousField).Result()
	if err == redis.Nil {
		return Continuous{}, nil
	}
	if err != nil {
		return Continuous{}, fmt.Errorf("inspect: read continuous mode: %w", err)
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return Continuous{}, fmt.Errorf("inspect: read continuous mode: %q is not a window in ms", v)
	}
	return Continuous{On: true, IdleWindow: time.Duration(ms) * time.Millisecond}, nil
}

// revisitsPending reports that the revisits of a continuous crawl keep it from being
// done: one is scheduled, and due within the idle window (or there is none).
func (p Progress) revisitsPending() bool {
	c := p.Continuous
	return c.On && p.Revisits > 0 && (c.IdleWindow <= 0 || p.NextRevisit <= c.IdleWindow)
}
