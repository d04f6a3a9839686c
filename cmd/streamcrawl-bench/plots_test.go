package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"html"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeFixtures records a small run of each kind in dir: two bench-peers runs (the older
// one with a crawler the newer lacks), one bench-memory run and bench-broad runs at
// three host counts, two at one of them.
func writeFixtures(t *testing.T, dir string) {
	t.Helper()
	day := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cond := func(d time.Duration) conditions {
		return conditions{Date: day.Add(d), GoVersion: "go1.26.8", GOMAXPROCS: 2, NumCPU: 2, Load: "1.00 1.00 1.00", Args: []string{"x"}}
	}
	old := &peersRecord{Pages: 100, PageSize: 0, PerHost: 8, Rounds: 1, Runs: []peerRow{{Crawler: "old-crawler", Round: 1, PagesPerS: 10, CPUSPer1000: 1}}}
	peers := &peersRecord{Pages: 5000, PageSize: 25000, PerHost: 8, Rounds: 2}
	for round := 1; round <= 2; round++ {
		for i, c := range []string{"streamcrawl", "colly", "crawlee-cheerio"} {
			peers.Runs = append(peers.Runs, peerRow{Crawler: c, Round: round, Pages: 5000,
				PagesPerS: float64(300*(3-i) + 10*round), CPUSPer1000: float64(i+1) + 0.1*float64(round)})
		}
	}
	mem := &memoryRecord{Pages: 3000, IntervalS: 1, PagesFetched: 3000, Items: 2500, WallS: 10, PeakRSSBytes: 80 << 20, PeakRedisBytes: 40 << 20}
	for i := range 10 {
		mem.Samples = append(mem.Samples, memorySample{TS: float64(i), Pages: int64(300 * (i + 1)), RSSBytes: int64(50+3*i) << 20,
			HWMBytes: int64(50+3*i) << 20, RedisUsedBytes: int64(5+4*i) << 20, RedisPeakBytes: int64(5+4*i) << 20})
	}
	recs := map[string]*record{
		"peers-old.json": {Kind: recordPeers, Conditions: cond(0), Peers: old},
		"peers-new.json": {Kind: recordPeers, Conditions: cond(time.Hour), Peers: peers},
		"memory.json":    {Kind: recordMemory, Conditions: cond(time.Hour), Memory: mem},
	}
	for i, h := range []int{10, 100, 100, 1000} {
		recs[recordName(recordBroad, "h"+string(rune('0'+i)), day)] = &record{Kind: recordBroad, Conditions: cond(time.Duration(i) * time.Minute),
			Broad: &broadRecord{Hosts: h, PagesPerHost: 20, DelayS: 0.5, SpanOverLimit: 1.01 + 0.01*float64(i), MedianGapOverDelay: 1.02}}
	}
	for name, r := range recs {
		if err := writeRecord(filepath.Join(dir, name), r); err != nil {
			t.Fatal(err)
		}
	}
}

// svgText returns the text of every element of the SVG file at path, failing the test if
// it does not parse as XML.
func svgText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s does not parse as XML: %v", path, err)
		}
		if c, ok := tok.(xml.CharData); ok {
			text.WriteString(html.UnescapeString(string(c)) + "\n")
		}
	}
	return text.String()
}

// TestPlotsDrawsTheThreeSVGsFromRecordedRuns: plots draws peers.svg from the newest
// bench-peers run, million.svg from the bench-memory run and politeness.svg from every
// bench-broad run; each parses as XML and names its series, and the same data draws the
// same bytes.
func TestPlotsDrawsTheThreeSVGsFromRecordedRuns(t *testing.T) {
	data, out := t.TempDir(), t.TempDir()
	writeFixtures(t, data)
	code, stdout, stderr := run("plots", "--data", data, "--out", out)
	if code != 0 {
		t.Fatalf("plots: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for file, want := range map[string][]string{
		peersSVG:      {"streamcrawl", "colly", "crawlee-cheerio", "pages/s", "CPU-s / 1000 pages"},
		millionSVG:    {"crawl process RSS (VmRSS)", "Redis used_memory", "MiB", "pages crawled (thousands)"},
		politenessSVG: {"span ÷ limit", "median gap at a host ÷ delay", "hosts crawled at once", "1000"},
	} {
		text := svgText(t, filepath.Join(out, file))
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s lacks %q; its text:\n%s", file, w, text)
			}
		}
		if file == peersSVG && strings.Contains(text, "old-crawler") {
			t.Errorf("%s drew the older bench-peers run:\n%s", file, text)
		}
	}
	again := t.TempDir()
	if code, stdout, stderr := run("plots", "--data", data, "--out", again); code != 0 {
		t.Fatalf("plots again: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, f := range []string{peersSVG, millionSVG, politenessSVG} {
		a, _ := os.ReadFile(filepath.Join(out, f))
		b, _ := os.ReadFile(filepath.Join(again, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two draws of the same data", f)
		}
	}
}

func TestPlotsWithoutRunsFails(t *testing.T) {
	if code, _, stderr := run("plots", "--data", t.TempDir(), "--out", t.TempDir()); code == 0 || !strings.Contains(stderr, "no recorded runs") {
		t.Errorf("plots of an empty directory: exit %d, stderr %q; want an error saying there are no runs", code, stderr)
	}
}
