package handlers

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// On a Redis Cluster a crawl reports which master holds each of its partitions, as the
// cluster itself places them (CLUSTER KEYSLOT of the partition's hash tag, CLUSTER
// SLOTS), and warns when they are spread unevenly (two of three partitions on one
// master) but not when each master holds one. One Redis, or one partition: nothing.
func TestPartitionSpreadOverTheClustersMasters(t *testing.T) {
	t.Parallel()
	cl := streamstest.StartCluster(t, 3)
	ctx := context.Background()
	rdb, err := streams.Connect(ctx, streams.ClientOptions{URL: cl.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	masterOf := func(crawl string, p int) string { // the master of tag {crawl:p}
		slot := int(rdb.ClusterKeySlot(ctx, crawl+":"+strconv.Itoa(p)).Val())
		for _, s := range slots {
			if slot >= s.Start && slot <= s.End {
				return s.Nodes[0].Addr
			}
		}
		t.Fatalf("slot %d of %s:%d is nobody's", slot, crawl, p)
		return ""
	}
	var even, uneven string // crawl names whose 3 partitions land on 3 masters, or fewer
	for i := 0; even == "" || uneven == ""; i++ {
		name := "spread" + strconv.Itoa(i)
		on := map[string]bool{}
		for p := range 3 {
			on[masterOf(name, p)] = true
		}
		if len(on) == 3 && even == "" {
			even = name
		} else if len(on) < 3 && uneven == "" {
			uneven = name
		}
	}
	for _, c := range []struct {
		crawl string
		warn  bool
	}{{even, false}, {uneven, true}} {
		l := streams.NewLayout(c.crawl, 3)
		spread, err := partitionSpread(ctx, rdb, l)
		if err != nil {
			t.Fatal(err)
		}
		if len(spread) != 3 {
			t.Fatalf("%s: %d masters in %v, want 3 (those holding none too)", c.crawl, len(spread), spread)
		}
		for p := range 3 {
			if addr := masterOf(c.crawl, p); !slices.Contains(spread[addr], p) {
				t.Errorf("%s: partition %d is on %s by the cluster, not in %v", c.crawl, p, addr, spread)
			}
		}
		core, logs := observer.New(zapcore.InfoLevel)
		if warned := logSpread(zap.New(core), spread, 3); warned != c.warn {
			t.Errorf("%s (%v): warned %v, want %v", c.crawl, spread, warned, c.warn)
		}
		if n := logs.FilterLevelExact(zapcore.WarnLevel).Len(); n != map[bool]int{false: 0, true: 1}[c.warn] {
			t.Errorf("%s: %d warnings logged: %v", c.crawl, n, logs.All())
		}
		if logs.Len() != 1 {
			t.Errorf("%s: %d lines logged, want 1", c.crawl, logs.Len())
		}
	}
	if spread, err := partitionSpread(ctx, rdb, streams.NewLayout(even, 1)); spread != nil || err != nil {
		t.Errorf("one partition: %v, %v; want nothing", spread, err)
	}
	single := streamstest.Start(t).Client()
	if spread, err := partitionSpread(ctx, single, streams.NewLayout("spread", 3)); spread != nil || err != nil {
		t.Errorf("one Redis: %v, %v; want nothing", spread, err)
	}
}
