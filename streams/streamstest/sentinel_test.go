package streamstest_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestSentinelFailsOverAKilledPrimary starts a primary, one replica and 3 sentinels,
// writes through a client built from the rig's Sentinel URL, kills the primary with
// SIGKILL and checks that the sentinels promote the replica, that the same client
// follows it with every write the replica had acknowledged (WAIT 1) and takes new
// writes.
func TestSentinelFailsOverAKilledPrimary(t *testing.T) {
	t.Parallel()
	began := time.Now()
	s := streamstest.StartSentinel(t, 1)
	t.Logf("primary + replica + 3 sentinels ready in %v", time.Since(began).Round(time.Millisecond))
	ctx := t.Context()

	nodes := s.Nodes()
	if len(nodes) != 2 || len(s.Sentinels) != 3 {
		t.Fatalf("want 2 data nodes and 3 sentinels, got %d and %d", len(nodes), len(s.Sentinels))
	}
	if got := s.Primary(); got != nodes[0] {
		t.Fatalf("primary at start (-want +got):\n-%s\n+%s", nodes[0].Addr, got.Addr)
	}
	opt, err := redis.ParseFailoverURL(s.URL())
	if err != nil {
		t.Fatalf("ParseFailoverURL(%q): %v", s.URL(), err)
	}
	var sentinels []string
	for _, sn := range s.Sentinels {
		sentinels = append(sentinels, sn.Addr)
	}
	if opt.MasterName != streamstest.DefaultMasterName || !slices.Equal(opt.SentinelAddrs, sentinels) {
		t.Errorf("URL %s reads as master %q sentinels %v; want %q %v", s.URL(), opt.MasterName, opt.SentinelAddrs,
			streamstest.DefaultMasterName, sentinels)
	}
	rdb := redis.NewFailoverClient(opt)
	defer rdb.Close()

	const keys = 500
	pipe := rdb.Pipeline()
	for i := range keys {
		pipe.Set(ctx, fmt.Sprintf("k%d", i), i, 0)
	}
	wait := pipe.Do(ctx, "WAIT", 1, 5000)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("SET %d keys + WAIT: %v", keys, err)
	}
	if n, _ := wait.Int(); n != 1 {
		t.Fatalf("WAIT 1 5000 answered %d replicas, want 1", n)
	}

	killed := time.Now()
	old := s.KillPrimary()
	if old != nodes[0] {
		t.Fatalf("killed %s, want the first primary %s", old.Addr, nodes[0].Addr)
	}
	primary := s.WaitPrimary(old)
	t.Logf("failover: %s -> %s in %v", old.Addr, primary.Addr, time.Since(killed).Round(time.Millisecond))
	if primary != nodes[1] {
		t.Fatalf("new primary (-want +got):\n-%s\n+%s", nodes[1].Addr, primary.Addr)
	}

	// The same client follows: it reads what the replica had, and writes go to it.
	var n int64
	for range 100 { // its connections to the dead primary fail first, then it asks again
		if n, err = rdb.DBSize(ctx).Result(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || n != keys {
		t.Fatalf("DBSIZE through the failover client after the failover: %d, %v; want %d", n, err, keys)
	}
	if err := rdb.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatalf("SET through the failover client after the failover: %v", err)
	}
	if v, err := primary.Client().Get(ctx, "after").Result(); err != nil || v != "1" {
		t.Errorf("the write after the failover is not on the new primary: %q, %v", v, err)
	}
}

// TestSentinelFailoverLosesWhatAFrozenReplicaMissed freezes the replica (SIGSTOP), writes
// to the primary, and checks that WAIT says no replica has the writes, and that after the
// primary is killed and the thawed replica promoted the writes are gone: the loss window
// of asynchronous replication that the failover tests of the crawl provoke this way.
func TestSentinelFailoverLosesWhatAFrozenReplicaMissed(t *testing.T) {
	t.Parallel()
	s := streamstest.StartSentinel(t, 1)
	ctx := t.Context()
	rdb := s.Client()
	if err := rdb.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 before the freeze: %d, %v", n, err)
	}
	replica := s.Nodes()[1]
	replica.Freeze()
	// More than the kernel's socket buffers hold: what the primary could not hand to the
	// kernel yet dies with it.
	const keys = 400
	value := strings.Repeat("x", 64<<10)
	pipe := rdb.Pipeline()
	for i := range keys {
		pipe.Set(ctx, fmt.Sprintf("k%d", i), value, 0)
	}
	wait := pipe.Do(ctx, "WAIT", 1, 200)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("SET %d keys + WAIT while the replica is frozen: %v", keys, err)
	}
	if n, _ := wait.Int(); n != 0 {
		t.Errorf("WAIT 1 200 while the replica is frozen: %d replicas, want 0", n)
	}
	old := s.KillPrimary()
	replica.Thaw()
	if primary := s.WaitPrimary(old); primary != replica {
		t.Fatalf("new primary (-want +got):\n-%s\n+%s", replica.Addr, primary.Addr)
	}
	c := replica.Client()
	if n, err := c.Exists(ctx, "before").Result(); err != nil || n != 1 {
		t.Errorf("the write acknowledged by WAIT is not on the new primary: %d, %v", n, err)
	}
	n, err := c.DBSize(ctx).Result()
	if err != nil || n >= 1+keys {
		t.Errorf("DBSIZE of the new primary %d, %v; want fewer than %d: the writes the frozen replica missed are lost", n, err, 1+keys)
	}
	if last, err := c.Exists(ctx, fmt.Sprintf("k%d", keys-1)).Result(); err != nil || last != 0 {
		t.Errorf("the last write while the replica was frozen is on the new primary (%d, %v)", last, err)
	}
	t.Logf("acknowledged writes lost at the failover: %d of %d (64 KiB each)", 1+keys-n, keys)
}
