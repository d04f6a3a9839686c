package metrics

import (
	"strconv"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Middleware is a Watermill handler middleware that counts the messages each stage
// handled and failed, their handling time and how many are in flight. The stage is the
// router handler's name without its partition suffix ("fetch-3" counts as "fetch"). Add
// it before middleware that turns panics into errors, so that those count as errors.
func (m *Metrics) Middleware(h message.HandlerFunc) message.HandlerFunc {
	if m == nil {
		return h
	}
	return func(msg *message.Message) ([]*message.Message, error) {
		stage := StageOf(message.HandlerNameFromCtx(msg.Context()))
		inFlight := m.stageInFlight.WithLabelValues(stage)
		inFlight.Inc()
		start := time.Now()
		out, err := h(msg)
		m.stageSeconds.WithLabelValues(stage).Observe(time.Since(start).Seconds())
		inFlight.Dec()
		m.stageHandled.WithLabelValues(stage).Inc()
		if err != nil {
			m.stageErrors.WithLabelValues(stage).Inc()
		}
		return out, err
	}
}

// StageOf returns the stage (or post-processor group) a router handler name stands
// for: the name without a trailing "-<partition>".
func StageOf(handler string) string {
	if i := strings.LastIndexByte(handler, '-'); i > 0 {
		if _, err := strconv.Atoi(handler[i+1:]); err == nil {
			return handler[:i]
		}
	}
	if handler == "" {
		return "unknown"
	}
	return handler
}
