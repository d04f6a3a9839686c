package streams_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

func TestLayoutKeys(t *testing.T) {
	one := streams.NewLayout("shop", 1)
	if got := one.Parts[0].Requests; got != "sc:{shop}:requests" {
		t.Fatalf("one partition: %s", got)
	}
	if one.Global != one.Parts[0] {
		t.Fatal("one partition: the crawl-wide keys must be the partition's")
	}
	// Partition i's tag is <crawl>:<i>, with ~N when that is needed to put it in the i-th
	// third of the cluster's slots (slots 6580 and 2453 for shop:0 and shop:1; 5008,
	// 9376 and 14838 for these).
	three := streams.NewLayout("shop", 3)
	for i, want := range []string{"sc:{shop:0~1}:ready", "sc:{shop:1~1}:ready", "sc:{shop:2}:ready"} {
		if got := three.Parts[i].Ready; got != want {
			t.Fatalf("partition %d: %s, want %s", i, got, want)
		}
	}
	if got := three.Global.Meta; got != "sc:{shop}:meta" {
		t.Fatalf("crawl-wide meta: %s", got)
	}
	if got := streams.DeadOf("sc:{shop:2}:responses"); got != "sc:{shop:2}:dead" {
		t.Fatalf("DeadOf: %s", got)
	}
}

// A crawl keeps the partition tags it was created with: a new one gets spread tags and
// records so in its meta hash; one created before (its meta hash has partitions and no
// tags field) keeps {<crawl>:<i>}, whether opened or only read.
func TestLayoutKeepsTheTagsTheCrawlWasCreatedWith(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	l, _, err := streams.OpenLayout(ctx, rdb, "fresh", 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := streams.NewLayout("fresh", 3); l.Parts[1].Tag != want.Parts[1].Tag || rdb.HGet(ctx, l.Global.Meta, "tags").Val() != "spread" {
		t.Fatalf("a new crawl: tag %s (want %s), meta %v", l.Parts[1].Tag, want.Parts[1].Tag, rdb.HGetAll(ctx, l.Global.Meta).Val())
	}
	if err := rdb.HSet(ctx, streams.NewKeys("old").Meta, "partitions", 3).Err(); err != nil {
		t.Fatal(err)
	}
	opened, _, err := streams.OpenLayout(ctx, rdb, "old", 3)
	if err != nil {
		t.Fatal(err)
	}
	read, err := streams.ReadLayout(ctx, rdb, "old")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		want := fmt.Sprintf("sc:{old:%d}:requests", i)
		if opened.Parts[i].Requests != want || read.Parts[i].Requests != want {
			t.Errorf("a crawl from before, partition %d: opened %s, read %s; want %s", i, opened.Parts[i].Requests, read.Parts[i].Requests, want)
		}
	}
	if rdb.HExists(ctx, opened.Global.Meta, "tags").Val() {
		t.Error("opening a crawl from before recorded spread tags for it")
	}
}

func TestPartitionOfSpreadsHostsAndIgnoresCaseAndDefaultPort(t *testing.T) {
	l := streams.NewLayout("c", 4)
	same := [][]string{
		{"Example.COM", "example.com", "example.com:80", "example.com:443"},
		{"127.0.0.1:8080", "127.0.0.1:8080"},
		{"[::1]:80", "[::1]"},
	}
	for _, hosts := range same {
		for _, h := range hosts[1:] {
			if l.PartitionOf(h) != l.PartitionOf(hosts[0]) {
				t.Errorf("%s and %s in different partitions", h, hosts[0])
			}
		}
	}
	counts := make([]int, 4)
	for i := range 400 {
		counts[l.PartitionOf(fmt.Sprintf("127.0.0.1:%d", 20000+i))]++
	}
	for p, n := range counts {
		if n < 60 { // 100 expected each
			t.Errorf("partition %d got %d of 400 hosts: %v", p, n, counts)
		}
	}
	if streams.NewLayout("c", 1).PartitionOf("anything") != 0 {
		t.Error("one partition: not 0")
	}
}

func TestOpenLayoutKeepsTheStoredPartitions(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	l, differs, err := streams.OpenLayout(ctx, rdb, "kept", 3)
	if err != nil || differs || len(l.Parts) != 3 {
		t.Fatalf("first open: %d partitions, differs %v, %v", len(l.Parts), differs, err)
	}
	l, differs, err = streams.OpenLayout(ctx, rdb, "kept", 5)
	if err != nil || !differs || len(l.Parts) != 3 {
		t.Fatalf("second open: %d partitions, differs %v, %v", len(l.Parts), differs, err)
	}
	if l, err = streams.ReadLayout(ctx, rdb, "kept"); err != nil || len(l.Parts) != 3 {
		t.Fatalf("read: %d partitions, %v", len(l.Parts), err)
	}
	if l, err = streams.ReadLayout(ctx, rdb, "never-seen"); err != nil || len(l.Parts) != 1 {
		t.Fatalf("read a new crawl: %d partitions, %v", len(l.Parts), err)
	}
	if _, _, err := streams.OpenLayout(ctx, rdb, "bad", 0); err == nil {
		t.Fatal("0 partitions accepted")
	}
	rdb.HSet(ctx, streams.NewKeys("corrupt").Meta, "partitions", "many")
	if _, err := streams.ReadLayout(ctx, rdb, "corrupt"); err == nil {
		t.Fatal("a corrupt partition count read without error")
	}
}
