package handlers

import (
	"path"
	"strings"
	"sync"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// politeness picks each host's rule (per-host defaults, glob overrides, robots.txt
// Crawl-delay, AutoThrottle) for streams.Hosts to enforce.
type politeness struct {
	s        spiders.Settings
	leaseTTL time.Duration

	mu      sync.Mutex
	latency map[string]time.Duration // AutoThrottle: moving average per host
}

func newPoliteness(s spiders.Settings) *politeness {
	return &politeness{s: s, leaseTTL: s.DownloadTimeout + 30*time.Second, latency: map[string]time.Duration{}}
}

// rule returns the politeness of host; crawlDelay is its robots.txt Crawl-delay.
func (p *politeness) rule(host string, crawlDelay time.Duration) streams.HostRule {
	r := streams.HostRule{Concurrency: max(p.s.PerHostConcurrency, 0), Delay: p.s.PerHostDelay, LeaseTTL: p.leaseTTL}
	h := strings.ToLower(host)
	for _, l := range p.s.Limits {
		if ok, _ := path.Match(strings.ToLower(l.Domain), h); ok {
			if l.Concurrency > 0 {
				r.Concurrency = l.Concurrency
			}
			r.Delay = l.Delay
			break
		}
	}
	r.Delay = max(r.Delay, crawlDelay)
	if r.Concurrency < 0 {
		r.Concurrency = 0
	}
	if p.s.Autothrottle != nil && *p.s.Autothrottle {
		p.mu.Lock()
		r.Delay = max(r.Delay, min(p.latency[h], time.Minute))
		p.mu.Unlock()
	}
	return r
}

// observe feeds a response time of host to AutoThrottle.
func (p *politeness) observe(host string, took time.Duration) {
	if p.s.Autothrottle == nil || !*p.s.Autothrottle {
		return
	}
	h := strings.ToLower(host)
	p.mu.Lock()
	if old, ok := p.latency[h]; ok {
		p.latency[h] = (old + took) / 2
	} else {
		p.latency[h] = took
	}
	p.mu.Unlock()
}
