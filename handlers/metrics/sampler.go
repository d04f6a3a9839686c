package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// DefaultSampleEvery is how often a Sampler reads a crawl at most unless told.
const DefaultSampleEvery = time.Second

// Sampler reads crawls' figures for every consumer of one process (the crawl collector
// behind /metrics, the dashboard), at most once per interval per crawl: consumers asking
// within the interval of the last read share it, and a crawl nobody asks about is not
// read at all. So a dashboard page refreshing every second and a Prometheus scrape cost
// one status read between them (about 30 commands for a crawl of one partition, see
// inspect.ReadStatus), whatever the crawl's size. Safe for concurrent use.
type Sampler struct {
	rdb   redis.UniversalClient
	every time.Duration

	mu     sync.Mutex
	crawls map[string]*crawlSample
	mem    crawlSample // Redis memory, shared by every crawl
}

// crawlSample is the last read of one crawl; its mutex makes concurrent askers share one.
type crawlSample struct {
	mu  sync.Mutex
	smp Sample
	err error
}

// Sample is one read of a crawl.
type Sample struct {
	// At is when it was read.
	At time.Time
	// Layout is the crawl's layout.
	Layout streams.Layout
	// Status is the crawl's status.
	Status *inspect.Status
	// RedisUsed and RedisMax are Redis's used_memory and maxmemory (summed over the
	// masters of a cluster).
	RedisUsed, RedisMax int64
}

// NewSampler returns a Sampler reading through rdb at most once per every (0:
// DefaultSampleEvery).
func NewSampler(rdb redis.UniversalClient, every time.Duration) *Sampler {
	if every <= 0 {
		every = DefaultSampleEvery
	}
	return &Sampler{rdb: rdb, every: every, crawls: map[string]*crawlSample{}}
}

// Every is the sampler's interval.
func (s *Sampler) Every() time.Duration { return s.every }

// Read returns crawl's figures, read now unless the last read is younger than the
// interval.
func (s *Sampler) Read(ctx context.Context, crawl string) (Sample, error) {
	s.mu.Lock()
	c := s.crawls[crawl]
	if c == nil {
		c = &crawlSample{}
		s.crawls[crawl] = c
	}
	s.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.smp.At.IsZero() && time.Since(c.smp.At) < s.every {
		return c.smp, c.err
	}
	smp := Sample{At: time.Now()}
	l, err := streams.ReadLayout(ctx, s.rdb, crawl)
	if err == nil {
		smp.Layout = l
		smp.Status, err = inspect.ReadStatus(ctx, s.rdb, l)
	}
	if err == nil {
		smp.RedisUsed, smp.RedisMax, _ = s.Memory(ctx) // best effort
	}
	c.smp, c.err = smp, err
	return smp, err
}

// Memory returns Redis's used_memory and maxmemory (see RedisMemory), read at most once
// per interval.
func (s *Sampler) Memory(ctx context.Context) (used, limit int64, err error) {
	m := &s.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.smp.At.IsZero() && time.Since(m.smp.At) < s.every {
		return m.smp.RedisUsed, m.smp.RedisMax, m.err
	}
	used, limit, err = RedisMemory(ctx, s.rdb)
	m.smp, m.err = Sample{At: time.Now(), RedisUsed: used, RedisMax: limit}, err
	return used, limit, err
}

// retain forgets the last read of every crawl not in names: a fleet's collector follows
// crawls that come and go, and a deleted crawl's figures must not stay in memory.
func (s *Sampler) retain(names map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.crawls {
		if !names[c] {
			delete(s.crawls, c)
		}
	}
}
