package streams_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// startReplicated starts a primary and one replica of it, synced.
func startReplicated(t *testing.T) (primary, replica *streamstest.Server) {
	t.Helper()
	primary = streamstest.Start(t, "--repl-diskless-sync-delay", "0")
	host, port, _ := net.SplitHostPort(primary.Addr)
	replica = streamstest.Start(t, "--replicaof", host, port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		info, err := replica.Client().InfoMap(t.Context(), "replication").Result()
		if err == nil && info["Replication"]["master_link_status"] == "up" {
			return primary, replica
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not synced with %s after 10 s: %v %v", replica.Addr, primary.Addr, info, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDurabilityReplicatedPublishesOnlyWhatTheReplicaHas publishes with durability
// replicated: every message is on the replica when Publish returns; with the replica
// frozen, Publish returns ErrNotReplicated (the messages are on the primary, and nothing
// says they were written); thawed, the next Publish goes through. Async publishes
// without waiting.
func TestDurabilityReplicatedPublishesOnlyWhatTheReplicaHas(t *testing.T) {
	t.Parallel()
	primary, replica := startReplicated(t)
	ctx := t.Context()
	c, err := streams.Connect(ctx, streams.ClientOptions{URL: primary.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDurability(ctx, streams.Durability{Mode: spiders.DurabilityReplicated, Timeout: time.Second}); err != nil {
		t.Fatalf("SetDurability replicated with a replica: %v", err)
	}
	pub, err := streams.NewPublisher(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Shutdown(t.Context())
	onReplica := func() int64 {
		n, err := replica.Client().XLen(ctx, "s").Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 50 {
		if err := pub.Publish("s", message.NewMessage(fmt.Sprint(i), []byte("x"))); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		// Read at once: WAIT returned only once the replica had it.
		if n := onReplica(); n != int64(i+1) {
			t.Fatalf("after publish %d the replica holds %d entries, want %d", i, n, i+1)
		}
	}

	replica.Freeze()
	err = pub.Publish("s", message.NewMessage("frozen", []byte("x")))
	if !errors.Is(err, streams.ErrNotReplicated) || !streams.IsWriteRefused(err) {
		t.Errorf("publish with the replica frozen: %v; want ErrNotReplicated, a refusal", err)
	}
	if n, _ := primary.Client().XLen(ctx, "s").Result(); n != 51 {
		t.Errorf("the primary holds %d entries, want 51 (the write is there, not acknowledged)", n)
	}
	replica.Thaw()
	if err := pub.Publish("s", message.NewMessage("thawed", []byte("x"))); err != nil {
		t.Fatalf("publish after the thaw: %v", err)
	}
	if n := onReplica(); n != 52 {
		t.Errorf("after the thaw the replica holds %d entries, want 52", n)
	}

	// Async: no wait (a wait would fail with the replica frozen).
	if err := c.SetDurability(ctx, streams.Durability{Mode: spiders.DurabilityAsync}); err != nil {
		t.Fatal(err)
	}
	replica.Freeze()
	defer replica.Thaw()
	if err := pub.Publish("s", message.NewMessage("async", []byte("x"))); err != nil {
		t.Fatalf("async publish with the replica frozen: %v", err)
	}
}

// TestDurabilityReplicatedRefusesWithoutReplicas: durability replicated cannot start on
// a Redis without replicas (each write would wait forever) nor on the embedded one.
func TestDurabilityReplicatedRefusesWithoutReplicas(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	ctx := t.Context()
	for _, url := range []string{srv.URL(), ""} {
		c, err := streams.Connect(ctx, streams.ClientOptions{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		err = c.SetDurability(ctx, streams.Durability{Mode: spiders.DurabilityReplicated})
		_ = c.Close()
		want := "has 0 connected"
		if url == "" {
			want = "the embedded Redis has none"
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SetDurability replicated on %q: %v, want an error saying %q", url, err, want)
		}
	}
	c, err := streams.Connect(ctx, streams.ClientOptions{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, bad := range []streams.Durability{{Mode: "sync"}, {Mode: spiders.DurabilityAsync, Replicas: 1}, {Mode: spiders.DurabilityReplicated, Timeout: time.Minute}} {
		if err := c.SetDurability(ctx, bad); err == nil {
			t.Errorf("SetDurability(%+v): no error", bad)
		}
	}
}

// TestDurabilityReplicatedOnACluster publishes to streams on every master of a cluster
// with a replica each: the WAIT goes to the master that took each write, so a frozen
// replica refuses the writes of its master's slots only.
func TestDurabilityReplicatedOnACluster(t *testing.T) {
	t.Parallel()
	cl := streamstest.StartClusterReplicas(t, 3, 1)
	ctx := t.Context()
	c, err := streams.Connect(ctx, streams.ClientOptions{URL: cl.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDurability(ctx, streams.Durability{Mode: spiders.DurabilityReplicated, Timeout: time.Second}); err != nil {
		t.Fatalf("SetDurability replicated on a cluster with replicas: %v", err)
	}
	pub, err := streams.NewPublisher(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Shutdown(t.Context())
	cc := c.UniversalClient.(*redis.ClusterClient)
	// One stream per master, and the replica of each master.
	streamOf := map[string]string{} // master -> a stream it serves
	for i := 0; len(streamOf) < 3 && i < 100; i++ {
		s := fmt.Sprintf("{s%d}:x", i)
		m, err := cc.MasterForKey(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := streamOf[m.Options().Addr]; !ok {
			streamOf[m.Options().Addr] = s
		}
	}
	replicaOf := map[string]*streamstest.Server{}
	for _, r := range cl.Replicas() {
		info, err := r.Client().InfoMap(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		replicaOf[net.JoinHostPort(info["Replication"]["master_host"], info["Replication"]["master_port"])] = r
	}
	for m, s := range streamOf {
		if err := pub.Publish(s, message.NewMessage("1", []byte("x"))); err != nil {
			t.Fatalf("publish to %s on %s: %v", s, m, err)
		}
		if n, err := replicaLen(t, replicaOf[m], s); err != nil || n != 1 {
			t.Errorf("replica of %s holds %d entries of %s (%v), want 1 when Publish returns", m, n, s, err)
		}
	}
	frozen := cl.Masters()[0].Addr
	replicaOf[frozen].Freeze()
	defer replicaOf[frozen].Thaw()
	for m, s := range streamOf {
		err := pub.Publish(s, message.NewMessage("2", []byte("x")))
		if m == frozen && !errors.Is(err, streams.ErrNotReplicated) {
			t.Errorf("publish to %s, whose master's replica is frozen: %v, want ErrNotReplicated", s, err)
		}
		if m != frozen && err != nil {
			t.Errorf("publish to %s on %s, whose replica answers: %v", s, m, err)
		}
	}
}

// replicaLen returns XLEN of stream on a cluster replica (READONLY: a replica answers
// MOVED otherwise).
func replicaLen(t *testing.T, replica *streamstest.Server, stream string) (int64, error) {
	pipe := replica.Client().Pipeline()
	pipe.ReadOnly(t.Context())
	n := pipe.XLen(t.Context(), stream)
	if _, err := pipe.Exec(t.Context()); err != nil {
		return 0, err
	}
	return n.Val(), nil
}
