package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// seedJSON is a seed pushed as a JSON object.
type seedJSON struct {
	URL      string            `json:"url"`
	Meta     map[string]any    `json:"meta"`
	Priority int               `json:"priority"`
	Method   string            `json:"method"`
	Body     string            `json:"body"`
	Headers  map[string]string `json:"headers"`
	Callback string            `json:"callback"`
	// DontFilter queues the seed even when the crawl has seen its URL (fetch it again).
	DontFilter bool `json:"dont_filter"`
}

// parseSeed reads a seed: a plain URL or a JSON object.
func parseSeed(raw string) (*spiders.Request, error) {
	raw = strings.TrimSpace(raw)
	if !strings.HasPrefix(raw, "{") {
		return spiders.NewRequest(raw, spiders.DefaultCallback)
	}
	var s seedJSON
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("handlers: seed %q: %w", short(raw), err)
	}
	r := &spiders.Request{URL: s.URL, Method: s.Method, Headers: s.Headers, Callback: s.Callback,
		Meta: s.Meta, Priority: s.Priority, DontFilter: s.DontFilter}
	if s.Body != "" {
		r.Body = []byte(s.Body)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("handlers: seed %q: %w", short(raw), err)
	}
	return r, nil
}

// seedPoll is how often fetch processes look for seeds pushed at runtime.
const seedPoll = 200 * time.Millisecond

// seedPoller queues the seeds pushed to <crawl>:start_urls while services run.
type seedPoller struct {
	spider   *spiders.Spider
	scope    *spiders.Scope
	frontier *frontier.Frontier
	counters *streams.Counters
	log      *zap.Logger
}

// Run polls every seedPoll until ctx ends, then returns nil.
func (p *seedPoller) Run(ctx context.Context) error {
	return loop.Every(ctx, seedPoll, loop.Config{Log: p.log, Msg: "taking runtime seeds failed; retrying"}, p.poll)
}

// poll queues one batch of seeds (frontier.TakeSeeds); an invalid one goes to the dead
// letters, one too large or with a URL too long is dropped.
func (p *seedPoller) poll(ctx context.Context) error {
	maxURL := p.spider.Settings.MaxURLLength
	if maxURL == 0 {
		maxURL = spiders.DefaultMaxURLLength
	}
	taken, e, err := p.frontier.TakeSeeds(ctx, 100, func(raw string) (*frontier.Candidate, error) {
		if len(raw) > spiders.DefaultMaxSeedSize {
			p.counters.Add("seeds_too_large", 1)
			p.log.Warn("runtime seed dropped: too large", zap.String("seed", short(raw)),
				zap.Int("bytes", len(raw)), zap.Int("max", spiders.DefaultMaxSeedSize))
			return nil, nil
		}
		r, err := parseSeed(raw)
		if err == nil && len(r.URL) > maxURL {
			p.counters.Add("dropped_url_too_long", 1)
			p.log.Warn("runtime seed dropped: URL too long", zap.String("url", short(r.URL)),
				zap.Int("length", len(r.URL)), zap.Int("max_url_length", maxURL))
			return nil, nil
		}
		if err == nil {
			if ok, reason := p.scope.Allows(r); !ok {
				err = fmt.Errorf("handlers: seed %s is out of the spider's scope (%s)", r.URL, reason)
			}
		}
		var c frontier.Candidate
		if err == nil {
			c, err = candidate(p.spider, r)
		}
		if err != nil {
			p.counters.Add("seeds_invalid", 1)
			p.log.Warn("invalid seed moved to dead letters", zap.String("seed", short(raw)), zap.Error(err))
			return nil, err
		}
		return &c, nil
	})
	if err != nil || taken == 0 {
		return err
	}
	countEmitted(p.counters, e)
	p.counters.Add("seeds_taken", int64(taken))
	p.log.Info("runtime seeds queued", zap.Int("taken", taken), zap.Int("new", e.Requests))
	return nil
}
