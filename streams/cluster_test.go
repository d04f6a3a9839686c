package streams_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/inspect"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

func TestParseClusterURL(t *testing.T) {
	o, err := streams.ParseClusterURL("redis+cluster://u:p%40ss@10.0.0.1:7000,10.0.0.2:7001,10.0.0.3:7002?dial_timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Addrs, []string{"10.0.0.1:7000", "10.0.0.2:7001", "10.0.0.3:7002"}) || o.Username != "u" ||
		o.Password != "p@ss" || o.DialTimeout != 3*time.Second || o.TLSConfig != nil {
		t.Fatalf("parsed %v user %q password %q dial %s tls %v", o.Addrs, o.Username, o.Password, o.DialTimeout, o.TLSConfig)
	}
	if o, err = streams.ParseClusterURL("rediss+cluster://h:1"); err != nil || o.TLSConfig == nil {
		t.Fatalf("rediss+cluster: %v, tls %v", err, o.TLSConfig)
	}
	for _, bad := range []string{"redis+cluster://", "redis+cluster://a:1,,b:2", "redis+cluster://a:1/0,b:2", "redis+cluster://a:1?bogus=1"} {
		if _, err := streams.ParseClusterURL(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestConnectClusterAndItsErrors(t *testing.T) {
	cl := streamstest.StartCluster(t, 3)
	ctx := context.Background()
	c, err := streams.Connect(ctx, streams.ClientOptions{URL: cl.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l := streams.NewLayout("spread", 3)
	for _, k := range l.Parts {
		if err := c.HSet(ctx, k.Stats, "x", 1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The commands pass the connected Client itself, which wraps the cluster client.
	st, err := inspect.ReadStatus(ctx, c, l)
	if err != nil {
		t.Fatal(err)
	}
	nodes := st.Nodes
	if len(nodes) != 3 {
		t.Fatalf("nodes %+v, %v", nodes, err)
	}
	var keys int64
	parts := 0
	for _, n := range nodes {
		keys += n.Keys
		parts += len(n.Partitions)
		if len(n.Partitions) != 1 { // the partition tags spread 3 partitions one per master
			t.Errorf("master %s holds partitions %v, want one", n.Addr, n.Partitions)
		}
		if n.UsedMemory <= 0 {
			t.Errorf("master %s: used_memory %d", n.Addr, n.UsedMemory)
		}
	}
	if keys != 3 || parts != 3 {
		t.Errorf("masters hold %d keys and %d partitions, want 3 and 3", keys, parts)
	}
	// A scan through the Client reads every master: crawls whose meta hashes live on
	// different masters are all listed.
	var crawls []string
	for i := 0; len(crawls) < 12; i++ {
		name := "crawl" + strconv.Itoa(i)
		if _, _, err := streams.OpenLayout(ctx, c, name, 1); err != nil {
			t.Fatal(err)
		}
		crawls = append(crawls, name)
	}
	listed, err := inspect.ListCrawls(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Sort(crawls); !slices.Equal(listed, crawls) {
		t.Errorf("crawls listed through the Client: %v, want %v", listed, crawls)
	}
	// Reset through the Client finds the keys only a scan knows (host queues) on every
	// master.
	for i, k := range l.Parts {
		if err := c.RPush(ctx, k.HostQueues+"h"+strconv.Itoa(i)+"|0", "e").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := inspect.Reset(ctx, c, l); err != nil {
		t.Fatal(err)
	}
	cc, _ := streams.AsCluster(c)
	var left atomic.Int64
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		left.Add(int64(len(m.Keys(ctx, "sc:{spread*").Val())))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if left := left.Load(); left != 0 {
		t.Errorf("%d keys of the crawl left after a reset through the Client", left)
	}
	// A node that is not part of a cluster, and a node that is down, are refused at once.
	plain := streamstest.Start(t)
	if _, err := streams.Connect(ctx, streams.ClientOptions{URL: "redis+cluster://" + plain.Addr}); err == nil ||
		!strings.Contains(err.Error(), "cannot use redis cluster") {
		t.Errorf("a plain redis as a cluster: %v", err)
	}
	plain.Kill()
	if _, err := streams.Connect(ctx, streams.ClientOptions{URL: "redis+cluster://" + plain.Addr}); err == nil {
		t.Error("a dead node: no error")
	}
}
