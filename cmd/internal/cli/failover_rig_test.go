package cli

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// failoverRig is a Redis deployment that a test can take a primary from.
type failoverRig struct {
	url string
	rdb redis.UniversalClient
	// fail takes a primary away: it freezes the replica that will replace it for lag
	// (writes acknowledged meanwhile are what asynchronous replication loses; 0: no
	// freeze), kills the primary with SIGKILL, thaws the replica, and returns once the
	// replica serves in its place, saying what happened. h paces the crawl around it
	// (freezeKill).
	fail func(t *testing.T, lag time.Duration, h faultHooks) failure
	// restore brings the killed primary back, as a replica, and returns once it synced.
	restore func(t *testing.T)
}

// failure is what failoverRig.fail did.
type failure struct {
	what string
	// acked is the entries ever added to the crawl's streams on the killed primary (with
	// a freeze; 0 without), kept those on the replica that took over: acked-kept were
	// acknowledged and lost.
	acked, kept int64
}

// clusterRig starts a cluster of 3 masters with a replica each. fail kills the master
// holding the most keys of crawl; restore restarts it.
func clusterRig(t *testing.T, crawl string) *failoverRig {
	c := streamstest.StartClusterReplicas(t, 3, 1)
	rdb := c.Client()
	var victim *streamstest.Server
	return &failoverRig{url: c.URL(), rdb: rdb, restore: func(t *testing.T) {
		t.Helper()
		victim.Restart() // its nodes.conf makes it a replica of the master that took over
		c.WaitReady()
	}, fail: func(t *testing.T, lag time.Duration, h faultHooks) failure {
		t.Helper()
		keys := crawlKeysPerMaster(t, rdb, crawl)
		for _, m := range c.Masters() {
			if victim == nil || keys[m.Addr] > keys[victim.Addr] {
				victim = m
			}
		}
		var heir *streamstest.Server
		for _, r := range c.Replicas() {
			info, err := r.Client().InfoMap(t.Context(), "replication").Result()
			if err != nil {
				t.Fatalf("INFO replication of %s: %v", r.Addr, err)
			}
			if repl := info["Replication"]; net.JoinHostPort(repl["master_host"], repl["master_port"]) == victim.Addr {
				heir = r
			}
		}
		if heir == nil {
			t.Fatalf("master %s has no replica", victim.Addr)
		}
		crawlStreams := streamKeys(t, victim, crawl)
		began := time.Now()
		var f failure
		f.acked, f.kept = freezeKill(t, heir, victim, lag, h, crawlStreams...)
		c.WaitReady()
		f.what = fmt.Sprintf("master %s (%d keys of the crawl) killed (its replica frozen %v before), %s serves its slots after %v; "+
			"entries added to the crawl's %d streams there: %d on the master, %d on its replica",
			victim.Addr, keys[victim.Addr], lag, heir.Addr, time.Since(began).Round(time.Millisecond), len(crawlStreams), f.acked, f.kept)
		return f
	}}
}

// faultHooks let a test pace its crawl around freezeKill's steps (a nil hook: nothing).
type faultHooks struct {
	// more lets more of the crawl through while the heir is frozen: freezeKill calls it
	// until the crawl's streams on the primary grew (writes the heir has not got).
	more func()
	// paused is called with the primary's writes paused, just before the kill.
	paused func()
	// killed is called once the primary is dead (before the failover).
	killed func()
}

// freezeKill takes primary away the way asynchronous replication loses writes: it
// freezes heir (the replica that will replace it) for lag, first writing 16 MB of filler
// to primary so that what it sends heir no longer fits in the kernel's socket buffers
// (what a killed primary had handed to the kernel still arrives); with h.more, it then
// lets the crawl on until entries were added to streams on the primary (so that the
// kill lands with writes in flight, at any pace of the workers). Then it stops the
// primary's clients' writes (CLIENT PAUSE: a write not acknowledged is not lost), reads
// the entries ever added to streams on it, kills it and thaws heir. With lag 0 it only
// kills the primary. It returns the entries added to streams on the primary (acked) and
// those heir has once it took in all the primary sent it (kept: read when heir sees its
// link to the primary down, before it is promoted and takes new writes); acked-kept were
// acknowledged and lost.
func freezeKill(t *testing.T, heir, primary *streamstest.Server, lag time.Duration, h faultHooks, streams ...string) (acked, kept int64) {
	t.Helper()
	killed := func() {
		if h.killed != nil {
			h.killed()
		}
	}
	if lag == 0 {
		primary.Kill()
		killed()
		return 0, 0
	}
	ctx := t.Context()
	rdb := primary.Client()
	heir.Freeze()
	filler := strings.Repeat("x", 16<<20)
	for i := 0; ; i++ { // on a cluster node, a key of one of its slots
		err := rdb.Set(ctx, fmt.Sprintf("{failover-test-filler-%d}", i), filler, 0).Err()
		if err == nil {
			break
		}
		if !strings.HasPrefix(err.Error(), "MOVED") || i == 1000 {
			t.Fatalf("filler on %s: %v", primary.Addr, err)
		}
	}
	start := time.Now()
	if h.more != nil {
		before := entriesAdded(t, primary, streams...)
		deadline := time.Now().Add(crawlTimeout)
		for n := before; n == before; n = entriesAdded(t, primary, streams...) {
			if time.Now().After(deadline) {
				t.Fatalf("no entry added to the crawl's streams on %s in %v with the heir frozen", primary.Addr, crawlTimeout)
			}
			h.more()
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("with %s frozen, the crawl's streams on %s grew by %d entries in %v", heir.Addr, primary.Addr,
			entriesAdded(t, primary, streams...)-before, time.Since(start).Round(time.Millisecond))
	}
	time.Sleep(lag - time.Since(start))
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", 5000, "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE on %s: %v", primary.Addr, err)
	}
	acked = entriesAdded(t, primary, streams...)
	if h.paused != nil {
		h.paused()
	}
	primary.Kill()
	heir.Thaw()
	waitLinkDown(t, heir)
	kept = entriesAdded(t, heir, streams...)
	killed()
	return acked, kept
}

// waitLinkDown waits until replica sees its link to its primary down: it took in all
// the primary had sent.
func waitLinkDown(t *testing.T, replica *streamstest.Server) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := replica.Client().InfoMap(t.Context(), "replication").Result()
		if err == nil && info["Replication"]["master_link_status"] == "down" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still sees its primary 30s after it was killed (%v): %v", replica.Addr, err, info["Replication"])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// streamKeys returns the crawl's streams on srv.
func streamKeys(t *testing.T, srv *streamstest.Server, crawl string) []string {
	t.Helper()
	var out []string
	iter := srv.Client().ScanType(t.Context(), 0, "sc:{"+crawl+"*", 1000, "stream").Iterator()
	for iter.Next(t.Context()) {
		out = append(out, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("streams of %s on %s: %v", crawl, srv.Addr, err)
	}
	return out
}

// entriesAdded sums XINFO STREAM entries-added of streams on srv: the entries ever added
// (trimming does not lower it, a lost write does); a missing stream counts 0. On a
// cluster replica it reads its own copy (READONLY) instead of being sent to its master.
func entriesAdded(t *testing.T, srv *streamstest.Server, streams ...string) int64 {
	t.Helper()
	ctx := t.Context()
	conn := srv.Client().Conn()
	defer conn.Close()
	_ = conn.ReadOnly(ctx).Err() // an error outside a cluster: nothing to do
	var n int64
	for _, s := range streams {
		info, err := conn.XInfoStream(ctx, s).Result()
		if err != nil && !strings.Contains(err.Error(), "no such key") {
			t.Fatalf("XINFO STREAM %s on %s: %v", s, srv.Addr, err)
		}
		if err == nil {
			n += info.EntriesAdded
		}
	}
	return n
}
