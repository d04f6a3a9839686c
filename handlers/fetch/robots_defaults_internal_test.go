package fetch

import (
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// TestDefaultRobotsScheduleGivesUpAHangingHostInUnderTwoMinutes pins the defaults that
// handlers' TestCrawlWithUnreachableRobotsEndsByItself runs scaled down (RobotsRetry and
// the download timeout shortened): the robots.txt checker a fetcher builds from a Config
// and Settings left at their defaults tries robots_unreachable_tries (3) times, each fetch
// bounded by 20 s, waiting 15 s and then 30 s between them. A host whose robots.txt hangs
// is given up after 105 s, so a crawl on the defaults ends by itself within 3 minutes.
func TestDefaultRobotsScheduleGivesUpAHangingHostInUnderTwoMinutes(t *testing.T) {
	cfg := Config{}
	cfg.setDefaults()
	s := cfg.Settings
	if cfg.RobotsRetry != 15*time.Second || s.RobotsUnreachableTries != 3 || s.DownloadTimeout < robotsTimeout {
		t.Fatalf("defaults: RobotsRetry %v, robots_unreachable_tries %d, download_timeout %v; want 15s, 3, at least %v",
			cfg.RobotsRetry, s.RobotsUnreachableTries, s.DownloadTimeout, robotsTimeout)
	}
	// As the fetcher builds it (fetcher.go).
	r := newRobots(nil, streams.NewLayout("defaults", 1), nil, robotsConfig{agent: s.UserAgent, retry: cfg.RobotsRetry,
		tries: s.RobotsUnreachableTries, maxDelay: s.MaxCrawlDelay, timeout: s.DownloadTimeout}, nil, nil)
	if r.tries != spiders.DefaultRobotsUnreachableTries || r.timeout != 20*time.Second || r.retry != DefaultRobotsRetry {
		t.Fatalf("robots checker: %d tries, %v a fetch, first wait %v; want 3, 20s, 15s", r.tries, r.timeout, r.retry)
	}
	worst := time.Duration(r.tries) * r.timeout // every fetch hangs until its timeout
	for wait, i := r.retry, 1; i < r.tries; wait, i = 2*wait, i+1 {
		worst += wait
	}
	if worst != 105*time.Second {
		t.Errorf("a hanging host is given up after %v, want 105s (3×20s + 15s + 30s)", worst)
	}
}
