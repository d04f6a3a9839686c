package streamstest_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

func TestClusterSpreadsKeysOverMasters(t *testing.T) {
	t.Parallel()
	began := time.Now()
	c := streamstest.StartCluster(t, 3)
	t.Logf("3-master cluster ready in %v", time.Since(began).Round(time.Millisecond))
	ctx := t.Context()

	if len(c.Addrs) != 3 || len(c.Masters()) != 3 {
		t.Fatalf("want 3 masters, got Addrs %v and %d Masters", c.Addrs, len(c.Masters()))
	}
	if want, got := "redis+cluster://"+strings.Join(c.Addrs, ","), c.URL(); got != want { // every node is a master
		t.Errorf("URL (-want +got):\n-%s\n+%s", want, got)
	}
	rdb := c.Client()
	const keys = 3000
	pipe := rdb.Pipeline()
	for i := range keys {
		pipe.Set(ctx, fmt.Sprintf("{t%d}:k", i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("SET %d keys through the cluster client: %v", keys, err)
	}

	var total int64
	for _, m := range c.Masters() {
		n, err := m.Client().DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("DBSIZE on %s: %v", m.Addr, err)
		}
		// Each master owns a third of the slots; a fair share is ~1000 keys.
		if n < keys/(2*3) {
			t.Errorf("master %s holds %d of %d keys: the slots are not spread", m.Addr, n, keys)
		}
		total += n
	}
	if total != keys {
		t.Errorf("keys over all masters (-want +got):\n-%d\n+%d", keys, total)
	}

	// Keys sharing the tag {a} share a slot, so they live on exactly one master: the one
	// the cluster client routes them to.
	tagged := []string{"{a}:1", "{a}:2", "{a}:queue"}
	for _, k := range tagged {
		if err := rdb.Set(ctx, k, "x", 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
	}
	owner, err := rdb.MasterForKey(ctx, "{a}")
	if err != nil {
		t.Fatalf("MasterForKey {a}: %v", err)
	}
	var holders []string
	for _, m := range c.Masters() {
		// KEYS, not EXISTS: a node answers MOVED for keys of slots it does not own.
		found, err := m.Client().Keys(ctx, "{a}:*").Result()
		if err != nil {
			t.Fatalf("KEYS on %s: %v", m.Addr, err)
		}
		switch n := len(found); n {
		case len(tagged):
			holders = append(holders, m.Addr)
		case 0:
		default:
			t.Errorf("master %s holds %d of the %d {a} keys: a hash tag was split", m.Addr, n, len(tagged))
		}
	}
	if want := []string{owner.Options().Addr}; fmt.Sprint(holders) != fmt.Sprint(want) {
		t.Errorf("masters holding the {a} keys (-want +got):\n-%v\n+%v", want, holders)
	}
}

func TestClusterKill(t *testing.T) {
	t.Parallel()
	c := streamstest.StartCluster(t, 3)
	masters := c.Masters()
	c.Kill()
	c.Kill() // idempotent
	for _, m := range masters {
		if conn, err := net.DialTimeout("tcp", m.Addr, time.Second); err == nil {
			_ = conn.Close()
			t.Errorf("master %s still accepts connections after Kill", m.Addr)
		}
	}
}

// TestClusterReplicasTakeOverAKilledMaster starts 3 masters with 1 replica each, writes
// keys over every master and lets the replicas catch up, kills one master with SIGKILL
// and checks that its replica takes its slots over with every key, and the cluster
// client reads and writes them all afterwards.
func TestClusterReplicasTakeOverAKilledMaster(t *testing.T) {
	t.Parallel()
	began := time.Now()
	c := streamstest.StartClusterReplicas(t, 3, 1)
	t.Logf("3 masters + 3 replicas ready in %v", time.Since(began).Round(time.Millisecond))
	ctx := t.Context()
	masters, replicas := c.Masters(), c.Replicas()
	if len(masters) != 3 || len(replicas) != 3 || len(c.Addrs) != 3 {
		t.Fatalf("want 3 masters and 3 replicas, got %d (Addrs %v) and %d", len(masters), c.Addrs, len(replicas))
	}
	if got := strings.Count(c.URL(), ","); got != 5 {
		t.Errorf("URL %s names %d nodes, want all 6", c.URL(), got+1)
	}
	replicaOf := map[string]string{} // replica -> its master
	for _, r := range replicas {
		info, err := r.Client().InfoMap(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		repl := info["Replication"]
		replicaOf[r.Addr] = net.JoinHostPort(repl["master_host"], repl["master_port"])
	}

	rdb := c.Client()
	const keys = 3000
	pipe := rdb.Pipeline()
	for i := range keys {
		pipe.Set(ctx, fmt.Sprintf("{t%d}:k", i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("SET %d keys through the cluster client: %v", keys, err)
	}
	// Every replica has every write of its master before the kill.
	for _, r := range replicas {
		waitCaughtUp(t, r, replicaOf[r.Addr])
	}

	victim := masters[0]
	var heir string
	for r, m := range replicaOf {
		if m == victim.Addr {
			heir = r
		}
	}
	killed := time.Now()
	victim.Kill()
	c.WaitReady()
	t.Logf("master %s killed: its replica %s serves its slots after %v", victim.Addr, heir, time.Since(killed).Round(time.Millisecond))
	now := c.Masters()
	var addrs []string
	for _, m := range now {
		addrs = append(addrs, m.Addr)
	}
	if len(now) != 3 || !strings.Contains(strings.Join(addrs, ","), heir) || strings.Contains(strings.Join(addrs, ","), victim.Addr) {
		t.Fatalf("masters after the failover %v: want 3 with %s and without %s", addrs, heir, victim.Addr)
	}
	var total int64
	for _, m := range now {
		n, err := m.Client().DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("DBSIZE on %s: %v", m.Addr, err)
		}
		total += n
	}
	if total != keys {
		t.Errorf("keys over the masters after the failover (-want +got):\n-%d\n+%d", keys, total)
	}
	// The cluster client finds the new master by itself (it reloads the slots after
	// errors): a command may fail while it still dials the dead node, a retry succeeds.
	retry := func(do func() error) (err error) {
		for range 50 {
			if err = do(); err == nil {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return err
	}
	for i := range keys {
		var v string
		err := retry(func() (err error) { v, err = rdb.Get(ctx, fmt.Sprintf("{t%d}:k", i)).Result(); return err })
		if err != nil || v != fmt.Sprint(i) {
			t.Fatalf("GET {t%d}:k through the cluster client after the failover: %q, %v", i, v, err)
		}
	}
	if err := retry(func() error { return rdb.Set(ctx, "{t0}:k", "again", 0).Err() }); err != nil {
		t.Fatalf("SET through the cluster client after the failover: %v", err)
	}
}

// waitCaughtUp waits until replica has every write its master at masterAddr has made.
func waitCaughtUp(t *testing.T, replica *streamstest.Server, masterAddr string) {
	t.Helper()
	ctx := t.Context()
	offset := func(addr, field string) string {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		info, err := c.InfoMap(ctx, "replication").Result()
		if err != nil {
			t.Fatalf("INFO replication of %s: %v", addr, err)
		}
		return info["Replication"][field]
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		m, r := offset(masterAddr, "master_repl_offset"), offset(replica.Addr, "slave_repl_offset")
		if m == r {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s at offset %s, its master %s at %s after 10 s", replica.Addr, r, masterAddr, m)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
