package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestContinuousModeSurvivesTheRegistry: each continuous mode a submit can ask for
// (off, on without an idle window, on with one) reads back the same from Redis.
func TestContinuousModeSurvivesTheRegistry(t *testing.T) {
	ctx := context.Background()
	reg := fleet.New(streamstest.Start(t).Client())
	for _, m := range []inspect.Continuous{{}, {On: true}, {On: true, IdleWindow: 90 * time.Second}} {
		if _, err := reg.Submit(ctx, fleet.Submission{Name: "shop", Spider: []byte(shopYAML), Continuous: fleet.ContinuousOf(m)}); err != nil {
			t.Fatal(err)
		}
		c, err := reg.Get(ctx, "shop")
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Mode(); got != m {
			t.Errorf("submitted %+v, read back %+v (Continuous %v)", m, got, c.Continuous)
		}
	}
}
