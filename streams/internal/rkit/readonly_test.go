package rkit_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// readScript and writeScript: one only reads, one writes.
var (
	readScript  = redis.NewScript(`return redis.call('GET', KEYS[1])`)
	writeScript = redis.NewScript(`return redis.call('SET', KEYS[1], ARGV[1])`)
)

// errorCount returns how many error replies of kind (ERR, NOSCRIPT...) the server sent.
func errorCount(t *testing.T, rdb *redis.Client, kind string) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_"+kind+":count="); ok {
			n, _ := strconv.Atoi(rest)
			return n
		}
	}
	return 0
}

// TestRunROReadsAndRefusesWrites: on Redis 7, RunRO runs a reading script (loading it
// when the server has not cached it) and a writing one is refused, which proves it ran
// as EVALSHA_RO/EVAL_RO and not as EVALSHA.
func TestRunROReadsAndRefusesWrites(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if got, err := rkit.RunRO(ctx, rdb, readScript, []string{"k"}).Text(); err != nil || got != "v" {
			t.Fatalf("read %d: %q %v, want v", i, got, err)
		}
	}
	err := rkit.RunRO(ctx, rdb, writeScript, []string{"k"}, "w").Err()
	if err == nil || !strings.Contains(err.Error(), "Write commands are not allowed from read-only scripts") {
		t.Errorf("a write through RunRO: %v, want it refused as from a read-only script", err)
	}
	if got := rdb.Get(ctx, "k").Val(); got != "v" {
		t.Errorf("k = %q after the refused write, want v", got)
	}
}

// TestRunROFallsBackOncePerClient: on a server without EVALSHA_RO and EVAL_RO (renamed
// away here, as Redis before 7 lacks them), RunRO still runs the script, and only the
// first call on a client pays the unknown-command error.
func TestRunROFallsBackOncePerClient(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t, "--rename-command", "EVALSHA_RO", "hidden_evalsha_ro", "--rename-command", "EVAL_RO", "hidden_eval_ro")
	rdb := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, "EVALSHA_RO", readScript.Hash(), 1, "k").Err(); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Fatalf("EVALSHA_RO on the renamed server: %v, want unknown command", err)
	}
	before := errorCount(t, rdb, "ERR")
	for i := range 10 {
		if got, err := rkit.RunRO(ctx, rdb, readScript, []string{"k"}).Text(); err != nil || got != "v" {
			t.Fatalf("read %d: %q %v, want v", i, got, err)
		}
	}
	if n := errorCount(t, rdb, "ERR") - before; n != 1 {
		t.Errorf("10 reads on one client cost %d unknown-command errors, want 1", n)
	}
	// Another client learns it for itself (after its connection's handshake, whose own
	// errors are not counted here).
	other := srv.Client()
	if err := other.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before = errorCount(t, rdb, "ERR") - 1
	if got, err := rkit.RunRO(ctx, other, readScript, []string{"k"}).Text(); err != nil || got != "v" {
		t.Fatalf("read on another client: %q %v, want v", got, err)
	}
	if n := errorCount(t, rdb, "ERR") - before; n != 2 {
		t.Errorf("after a second client's first read: %d unknown-command errors, want 2", n)
	}
}

// TestRunROOnMiniredis: the embedded Redis (miniredis) takes XINFO, XRANGE and TIME for
// writes in a read-only script, and under redis.pcall hands the refusal back as a
// value; RunRO runs reading scripts that use them as EVALSHA, with the right answers.
func TestRunROOnMiniredis(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []any{"f", "v"}}).Err(); err != nil {
		t.Fatal(err)
	}
	script := redis.NewScript(`redis.call('TIME'); return #redis.call('XRANGE', KEYS[1], '-', '+')`)
	pcalled := redis.NewScript(`local r = redis.pcall('XINFO', 'STREAM', KEYS[1]); if r['err'] then return -1 end; return 1`)
	for i := range 3 {
		if n, err := rkit.RunRO(ctx, rdb, script, []string{"s"}).Int(); err != nil || n != 1 {
			t.Fatalf("read %d on miniredis: %d %v, want 1", i, n, err)
		}
		if n, err := rkit.RunRO(ctx, rdb, pcalled, []string{"s"}).Int(); err != nil || n != 1 {
			t.Fatalf("pcall read %d on miniredis: %d %v, want 1 (the stream exists)", i, n, err)
		}
	}
}
