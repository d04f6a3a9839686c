package streamstest_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

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
	if want, got := "redis+cluster://"+strings.Join(c.Addrs, ","), c.URL(); got != want {
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
	c.Kill()
	c.Kill() // idempotent
	for _, m := range c.Masters() {
		if conn, err := net.DialTimeout("tcp", m.Addr, time.Second); err == nil {
			_ = conn.Close()
			t.Errorf("master %s still accepts connections after Kill", m.Addr)
		}
	}
}
