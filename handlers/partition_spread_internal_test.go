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
// SLOTS): a crawl's own 3 partitions sit one per master, and tags that put two on one
// master are warned about. One Redis, or one partition: nothing.
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
	masterOf := func(tag string) string { // the master of hash tag {tag}
		slot := int(rdb.ClusterKeySlot(ctx, tag).Val())
		for _, s := range slots {
			if slot >= s.Start && slot <= s.End {
				return s.Nodes[0].Addr
			}
		}
		t.Fatalf("slot %d of %s is nobody's", slot, tag)
		return ""
	}
	// A crawl's own tags: one partition per master. Tags placed by their hash alone
	// (here: crawl names as tags) can put two on one master: the warning.
	uneven := streams.Layout{Crawl: "uneven", Global: streams.NewKeys("uneven")}
	on := map[string]bool{}
	for i := 0; len(uneven.Parts) < 3; i++ {
		k := streams.NewKeys("uneven" + strconv.Itoa(i))
		if m := masterOf(k.Tag); len(uneven.Parts) < 2 || on[m] {
			uneven.Parts, on[m] = append(uneven.Parts, k), true
		}
	}
	for _, c := range []struct {
		l    streams.Layout
		warn bool
	}{{streams.NewLayout("even", 3), false}, {uneven, true}} {
		spread, err := partitionSpread(ctx, rdb, c.l)
		if err != nil {
			t.Fatal(err)
		}
		if len(spread) != 3 {
			t.Fatalf("%s: %d masters in %v, want 3 (those holding none too)", c.l.Crawl, len(spread), spread)
		}
		for p, k := range c.l.Parts {
			if addr := masterOf(k.Tag); !slices.Contains(spread[addr], p) {
				t.Errorf("%s: partition %d is on %s by the cluster, not in %v", c.l.Crawl, p, addr, spread)
			}
		}
		if !c.warn {
			for addr, ps := range spread {
				if len(ps) != 1 {
					t.Errorf("%s: master %s holds partitions %v, want one", c.l.Crawl, addr, ps)
				}
			}
		}
		core, logs := observer.New(zapcore.InfoLevel)
		if warned := logSpread(zap.New(core), spread, 3); warned != c.warn {
			t.Errorf("%s (%v): warned %v, want %v", c.l.Crawl, spread, warned, c.warn)
		}
		if n := logs.FilterLevelExact(zapcore.WarnLevel).Len(); n != map[bool]int{false: 0, true: 1}[c.warn] {
			t.Errorf("%s: %d warnings logged: %v", c.l.Crawl, n, logs.All())
		}
		if logs.Len() != 1 {
			t.Errorf("%s: %d lines logged, want 1", c.l.Crawl, logs.Len())
		}
	}
	// Two partitions on three masters are even: one master has none, none has two.
	if warned := logSpread(zap.NewNop(), map[string][]int{"a": {0}, "b": {1}, "c": nil}, 2); warned {
		t.Error("two partitions on three masters warned")
	}
	if spread, err := partitionSpread(ctx, rdb, streams.NewLayout("even", 1)); spread != nil || err != nil {
		t.Errorf("one partition: %v, %v; want nothing", spread, err)
	}
	single := streamstest.Start(t).Client()
	if spread, err := partitionSpread(ctx, single, streams.NewLayout("spread", 3)); spread != nil || err != nil {
		t.Errorf("one Redis: %v, %v; want nothing", spread, err)
	}
}
