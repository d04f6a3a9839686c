package handlers

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestWaitLogSumsWaitsAtInfo(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.InfoLevel)
	w := &waitLog{log: zap.New(core), interval: 5 * time.Millisecond}
	w.count("retries_scheduled", 2)
	w.count("host_slowdowns", 5)
	w.count("pages_fetched", 9) // not a wait
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	for logs.FilterMessage("requests waiting").Len() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	got := logs.FilterMessage("requests waiting").All()
	if len(got) != 1 { // nothing waited after the first line: no more lines
		t.Fatalf("%d lines, want 1: %v", len(got), got)
	}
	f := got[0].ContextMap()
	if f["retries_scheduled"] != int64(2) || f["host_slowdowns"] != int64(5) || f["robots_waits"] != int64(0) {
		t.Errorf("fields %v, want 2 retries and 5 host slow-downs", f)
	}
}

func TestSampledLogIsBounded(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.InfoLevel)
	log := sampled(zap.New(core), 3)
	for range 1000 {
		log.Info("retry scheduled")
	}
	// 3 per second: the loop may straddle one tick of the sampler.
	if n := logs.Len(); n < 3 || n > 6 {
		t.Errorf("%d of 1000 lines logged, want 3 (up to 6 across a second boundary)", n)
	}
}
