package rkit

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// RateLimited logs a recurring error at most once per interval, with the number of
// occurrences suppressed since, so that an outage cannot flood the log.
type RateLimited struct {
	log      *zap.Logger
	interval time.Duration

	mu         sync.Mutex
	last       map[string]time.Time
	suppressed map[string]int
}

func NewRateLimited(log *zap.Logger, interval time.Duration) *RateLimited {
	return &RateLimited{log: log, interval: interval, last: map[string]time.Time{}, suppressed: map[string]int{}}
}

// Warn logs msg with err unless msg was logged less than the interval ago.
func (r *RateLimited) Warn(msg string, err error, fields ...zap.Field) {
	r.mu.Lock()
	now := time.Now()
	if now.Sub(r.last[msg]) < r.interval {
		r.suppressed[msg]++
		r.mu.Unlock()
		return
	}
	n := r.suppressed[msg]
	r.last[msg] = now
	r.suppressed[msg] = 0
	r.mu.Unlock()
	r.log.Warn(msg, append(fields, zap.Error(err), zap.Int("suppressed", n))...)
}
