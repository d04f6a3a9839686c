package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchMemoryRecordsASeries: bench-memory crawls a small demo shop in one crawl
// process and records samples of its RSS and of Redis's memory as the pages go up, and
// the pages fetched at the end.
func TestBenchMemoryRecordsASeries(t *testing.T) {
	t.Setenv(mainEnv, "1") // the site and the crawl are this test binary run as the command
	path := filepath.Join(t.TempDir(), "memory.json")
	code, out, errOut := run("bench-memory", "--pages", "300", "--interval", "200ms", "--record", path)
	if code != 0 {
		t.Fatalf("bench-memory: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "peak RSS MiB") {
		t.Errorf("no table in the output:\n%s", out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	m := r.Memory
	if r.Kind != recordMemory || m == nil {
		t.Fatalf("record of kind %q, memory %v; want a memory record:\n%s", r.Kind, m, b)
	}
	if len(m.Samples) < 2 || m.PagesFetched < 290 {
		t.Fatalf("%d samples, %d pages at the end; want >= 2 samples and >= 290 pages:\n%s", len(m.Samples), m.PagesFetched, b)
	}
	for i, s := range m.Samples {
		if s.RSSBytes <= 0 || s.HWMBytes < s.RSSBytes || s.RedisUsedBytes <= 0 {
			t.Errorf("sample %d: RSS %d, peak %d, Redis used_memory %d; want RSS > 0, peak >= RSS, Redis > 0", i, s.RSSBytes, s.HWMBytes, s.RedisUsedBytes)
		}
	}
	if r.Conditions.GoVersion == "" || r.Conditions.GOMAXPROCS < 1 || len(r.Conditions.Args) == 0 || r.Conditions.Args[0] != "bench-memory" {
		t.Errorf("conditions %+v: want the Go version, GOMAXPROCS and the command's arguments", r.Conditions)
	}
}
