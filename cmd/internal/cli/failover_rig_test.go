package cli

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// failoverRig is a Redis deployment that a test can take a primary from.
type failoverRig struct {
	url string
	rdb redis.UniversalClient
	// fail takes a primary away: it freezes the replica that will replace it for lag
	// (writes acknowledged meanwhile are what asynchronous replication loses; 0: no
	// freeze), kills the primary with SIGKILL, thaws the replica, and returns once the
	// replica serves in its place, saying what happened.
	fail func(t *testing.T, lag time.Duration) failure
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
	}, fail: func(t *testing.T, lag time.Duration) failure {
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
		acked := freezeKill(t, heir, victim, lag, crawlStreams...)
		c.WaitReady()
		f := failure{acked: acked, kept: entriesAdded(t, heir, crawlStreams...)}
		f.what = fmt.Sprintf("master %s (%d keys of the crawl) killed (its replica frozen %v before), %s serves its slots after %v; "+
			"entries added to the crawl's %d streams there: %d on the master, %d on its replica",
			victim.Addr, keys[victim.Addr], lag, heir.Addr, time.Since(began).Round(time.Millisecond), len(crawlStreams), f.acked, f.kept)
		return f
	}}
}

// freezeKill takes primary away the way asynchronous replication loses writes: it
// freezes heir (the replica that will replace it) for lag, first writing 16 MB of filler
// to primary so that what it sends heir no longer fits in the kernel's socket buffers
// (what a killed primary had handed to the kernel still arrives); then it stops the
// primary's clients' writes (CLIENT PAUSE: a write not acknowledged is not lost), reads
// the entries ever added to streams on it, kills it and thaws heir. With lag 0 it only
// kills the primary. It returns the entries added.
func freezeKill(t *testing.T, heir, primary *streamstest.Server, lag time.Duration, streams ...string) int64 {
	t.Helper()
	if lag == 0 {
		primary.Kill()
		return 0
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
	time.Sleep(lag)
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", 5000, "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE on %s: %v", primary.Addr, err)
	}
	added := entriesAdded(t, primary, streams...)
	primary.Kill()
	heir.Thaw()
	return added
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
// (trimming does not lower it, a lost write does); a missing stream counts 0.
func entriesAdded(t *testing.T, srv *streamstest.Server, streams ...string) int64 {
	t.Helper()
	var n int64
	for _, s := range streams {
		info, err := srv.Client().XInfoStream(t.Context(), s).Result()
		if err != nil && !strings.Contains(err.Error(), "no such key") {
			t.Fatalf("XINFO STREAM %s on %s: %v", s, srv.Addr, err)
		}
		if err == nil {
			n += info.EntriesAdded
		}
	}
	return n
}

// waitStat waits until the crawl's counter field reaches min, failing the test after
// timeout. It returns the value read.
func waitStat(t *testing.T, rdb redis.UniversalClient, crawl, field string, min int64, timeout time.Duration) int64 {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, err := rdb.HGet(context.Background(), streams.NewKeys(crawl).Stats, field).Int64()
		if err == nil && v >= min {
			return v
		}
		if time.Now().After(deadline) {
			logStatus(t, rdb, crawl)
			t.Fatalf("%s of crawl %s: %d after %v, want %d (%v)", field, crawl, v, timeout, min, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
