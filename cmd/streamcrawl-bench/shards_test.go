package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// On a Redis Cluster the benchmarks' Redis figures are every master's: the commands
// sent to all three shards are counted, and each shard has its own CPU figure.
func TestRedisFiguresSumEveryClusterMaster(t *testing.T) {
	t.Parallel()
	cl := streamstest.StartCluster(t, 3)
	ctx := context.Background()
	c, err := streams.Connect(ctx, streams.ClientOptions{URL: cl.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before, calls := shardInfo(ctx, c), commandCalls(ctx, c)
	if len(before) != 3 {
		t.Fatalf("INFO read from %d shards, want 3", len(before))
	}
	const n = 300
	for i := range n {
		if err := c.Set(ctx, fmt.Sprintf("k%d", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	after := shardInfo(ctx, c)
	if sets := commandCalls(ctx, c)["set"] - calls["set"]; sets != n {
		t.Fatalf("SET calls summed over the masters: %v, want %d", sets, n)
	}
	if cmds := sumShards(after)["total_commands_processed"] - sumShards(before)["total_commands_processed"]; cmds < n {
		t.Fatalf("commands summed over the masters: %v, want at least %d", cmds, n)
	}
	if cpu := shardCPU(before, after); len(cpu) != 3 {
		t.Fatalf("CPU figures for %d shards, want 3: %v", len(cpu), cpu)
	}
}

// An INFO commandstats answer gives each command's calls and its microseconds.
func TestParseCommandStatsReadsCallsAndMicroseconds(t *testing.T) {
	t.Parallel()
	got := parseCommandStats("# Commandstats\r\ncmdstat_xadd:calls=14132,usec=61073,usec_per_call=4.32,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_xinfo|groups:calls=847,usec=4380,usec_per_call=5.17,rejected_calls=0,failed_calls=5\r\n")
	want := map[string]float64{"xadd": 14132, "xadd" + usecSuffix: 61073, "xinfo|groups": 847, "xinfo|groups" + usecSuffix: 4380}
	if len(got) != len(want) {
		t.Fatalf("parsed %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("parsed %v, want %v", got, want)
		}
	}
}
