package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

func TestPeerCountsReadsEachCrawlersOutput(t *testing.T) {
	summary := "crawl peers: done=true in 24.034s\n  pages fetched   1984 (83/s)\n" +
		"  items scraped   1646, stored 1640 (6 duplicates skipped)\n  items file      /tmp/s.jsonl\n"
	for _, c := range []struct {
		out          string
		pages, items int64
	}{
		{summary, 1984, 1640},
		{"warning: x\n{\"pages\":3681,\"items\":3511,\"errors\":16}\n", 3681, 3511},
		{"noise\n{\"pages\":874,\"items\":809,\"failed\":87}", 874, 809},
		{"nothing here\n", 0, 0},
	} {
		if p, i := peerCounts(c.out); p != c.pages || i != c.items {
			t.Errorf("peerCounts(%q) = %d, %d; want %d, %d", c.out, p, i, c.pages, c.items)
		}
	}
}

func TestDistinctSKUsCountsEachProductOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.jsonl")
	lines := `{"url":"a","sku":"SKU-1"}` + "\n" + `{"sku":"SKU-2","name":"x"}` + "\n" + `{"sku":"SKU-1"}` + "\n" +
		`not json` + "\n" + `{"sku":""}` + "\n"
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := distinctSKUs(path); n != 2 {
		t.Errorf("distinctSKUs = %d, want 2", n)
	}
	if n := distinctSKUs(filepath.Join(t.TempDir(), "missing")); n != 0 {
		t.Errorf("distinctSKUs of a missing file = %d, want 0", n)
	}
}

func TestPeerRowLeavesOutRedisForACrawlerThatUsedNone(t *testing.T) {
	var b bytes.Buffer
	printPeerRow(&b, peerRun{Name: "streamcrawl", Pages: 1000, Items: 800, Distinct: 800, Wall: 2 * time.Second,
		CPU: 1500 * time.Millisecond, PeakRSS: 50e6, RedisCPU: 0.1, RedisCmds: 9000}, true)
	printPeerRow(&b, peerRun{Name: "crawlee-cheerio", Pages: 1000, Wall: 10 * time.Second, RedisCPU: 0.05, RedisCmds: 12}, false)
	rows := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(rows) != 4 {
		t.Fatalf("%d lines, want header, rule and 2 rows:\n%s", len(rows), b.String())
	}
	for _, want := range []string{"|     500 |", "|         1.50 |", "|    50 MB |", "|          100 |", "|          9.0 |", "800 (800)"} {
		if !strings.Contains(rows[2], want) {
			t.Errorf("streamcrawl row lacks %q:\n%s", want, rows[2])
		}
	}
	if strings.Count(rows[3], "|            - ") != 2 {
		t.Errorf("crawlee row should show no Redis figures:\n%s", rows[3])
	}
}

// Each round's crawler writes a new items file: a second round appending to the first's
// file counted the first's items as already stored (streamcrawl's sink skips them).
func TestEachPeerRunStartsANewItemsFile(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	dir := t.TempDir()
	items := filepath.Join(dir, "x.jsonl")
	if err := os.WriteFile(items, []byte(`{"sku":"A"}`+"\n"+`{"sku":"B"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := []string{"sh", "-c", `echo '{"sku":"C"}' >> "$0"; echo '{"pages":1,"items":1}'`, items}
	run, err := runPeer(context.Background(), rdb, dir, "x", argv, items)
	if err != nil {
		t.Fatal(err)
	}
	if run.Items != 1 || run.Distinct != 1 {
		t.Fatalf("items %d, distinct SKUs %d; want 1 and 1 (the last round's file only)", run.Items, run.Distinct)
	}
}

func TestPeerRowRecordsRatesAndRound(t *testing.T) {
	r := peerRun{Name: "colly", Round: 2, Pages: 1000, Wall: 4 * time.Second, CPU: 3 * time.Second, RedisCmds: 12}.row()
	if r.Crawler != "colly" || r.Round != 2 || r.PagesPerS != 250 || r.CPUSPer1000 != 3 || !r.RedisIdleOnly {
		t.Errorf("row %+v: want colly round 2, 250 pages/s, 3 CPU-s per 1000 pages, Redis idle only", r)
	}
}
