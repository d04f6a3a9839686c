package loop

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestBackoffBounds(t *testing.T) {
	const base, max = 100 * time.Millisecond, 5 * time.Second
	for _, tc := range []struct {
		n      int
		lo, hi time.Duration
	}{
		{-3, 50 * time.Millisecond, 150 * time.Millisecond},
		{0, 50 * time.Millisecond, 150 * time.Millisecond},
		{1, 50 * time.Millisecond, 150 * time.Millisecond},
		{2, 100 * time.Millisecond, 300 * time.Millisecond},
		{4, 400 * time.Millisecond, 1200 * time.Millisecond},
		{6, 1600 * time.Millisecond, 4800 * time.Millisecond},
		{7, 2500 * time.Millisecond, 5 * time.Second},  // 6.4 s capped
		{64, 2500 * time.Millisecond, 5 * time.Second}, // no overflow
		{1 << 30, 2500 * time.Millisecond, 5 * time.Second},
	} {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := Backoff(base, max, tc.n)
			if d < tc.lo || d > tc.hi {
				t.Fatalf("Backoff(%v, %v, %d) = %v, want in [%v, %v]", base, max, tc.n, d, tc.lo, tc.hi)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("Backoff(..., %d) gave one value in 200 draws: no jitter", tc.n)
		}
	}
	if d := Backoff(0, max, 3); d != 0 {
		t.Errorf("Backoff with base 0 = %v, want 0", d)
	}
	if d := Backoff(time.Hour, time.Minute, 1); d > time.Minute {
		t.Errorf("Backoff with base over max = %v, want at most the max", d)
	}
}

func TestEveryRunsUntilCtxEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := Every(ctx, time.Millisecond, Config{}, func(ctx context.Context) error {
		calls++
		if calls == 3 {
			cancel()
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Every = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestEveryNowRunsAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	// An interval of an hour: only Now makes the first round run before the test times out.
	err := Every(ctx, time.Hour, Config{Now: true}, func(context.Context) error {
		calls++
		cancel()
		return nil
	})
	if err != nil || calls != 1 {
		t.Fatalf("Every = %v after %d calls, want nil after 1", err, calls)
	}
}

func TestEveryLogsFailuresRateLimited(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := Every(ctx, time.Millisecond, Config{Log: zap.New(core), Msg: "dispatch failed", LogEvery: time.Hour},
		func(context.Context) error {
			calls++
			if calls == 5 {
				cancel()
			}
			return errors.New("redis down")
		})
	if err != nil {
		t.Fatal(err)
	}
	if got := logs.FilterMessage("dispatch failed").Len(); got != 1 {
		t.Fatalf("%d failures logged of 5 within the log interval, want 1", got)
	}
}

func TestStopEndsTheLoop(t *testing.T) {
	want := errors.New("crawl cannot finish")
	calls := 0
	err := Every(context.Background(), time.Millisecond, Config{}, func(context.Context) error {
		if calls++; calls == 2 {
			return Stop(want)
		}
		return nil
	})
	if err != want || calls != 2 {
		t.Fatalf("Every = %v after %d calls, want %v after 2", err, calls, want)
	}
	err = Every(context.Background(), time.Millisecond, Config{}, func(context.Context) error { return Stop(nil) })
	if err != nil {
		t.Fatalf("Every after Stop(nil) = %v, want nil", err)
	}
}

func TestPacedUsesTheWaitItIsGiven(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls int
	// first is an hour: a round runs again only because the task asks for 1 ms.
	err := Paced(ctx, time.Hour, Config{Now: true}, func(context.Context) (time.Duration, error) {
		calls++
		if calls == 3 {
			cancel()
		}
		return time.Millisecond, nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Paced = %v after %d calls, want nil after 3", err, calls)
	}
	if err := Paced(context.Background(), 0, Config{}, nil); err == nil {
		t.Error("Paced with no interval: no error")
	}
}

// A round starts as soon as Wake's channel closes, long before the interval, and the
// channel is asked for again before each wait.
func TestWakeStartsARoundEarly(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var asked atomic.Int32
	woke := make(chan struct{})
	close(woke)
	wake := func() <-chan struct{} {
		if asked.Add(1) <= 2 {
			return woke // the first two waits end at once
		}
		return nil // then the hour-long interval
	}
	var rounds atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- Every(ctx, time.Hour, Config{Wake: wake}, func(context.Context) error {
			rounds.Add(1)
			return nil
		})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for rounds.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := rounds.Load(); got != 2 {
		t.Fatalf("%d rounds before an hour passed, want 2 (one per wake)", got)
	}
	if got := asked.Load(); got != 3 {
		t.Fatalf("Wake asked %d times, want 3 (before each wait)", got)
	}
}
