package loop

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// Errors logs recurring errors at most once per interval and message, with the number
// of occurrences not logged since, so that an outage cannot flood the log. It is safe
// for concurrent use.
type Errors struct {
	log      *zap.Logger
	interval time.Duration

	mu         sync.Mutex
	last       map[string]time.Time
	suppressed map[string]int
}

// NewErrors returns an Errors logging through log (nil: no-op) at most once per
// interval (0: 5s) and message.
func NewErrors(log *zap.Logger, interval time.Duration) *Errors {
	if log == nil {
		log = zap.NewNop()
	}
	if interval <= 0 {
		interval = defaultLogEvery
	}
	return &Errors{log: log, interval: interval, last: map[string]time.Time{}, suppressed: map[string]int{}}
}

// Warn logs msg with err unless msg was logged less than the interval ago.
func (r *Errors) Warn(msg string, err error, fields ...zap.Field) {
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
