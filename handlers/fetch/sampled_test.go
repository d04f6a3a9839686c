package fetch

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestSampledLogIsBounded(t *testing.T) {
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
