package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// TestRun runs the example as it ships, on the embedded Redis, and checks that every
// product of the demo shop is in the file once, with its name and price.
func TestRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "goshop.jsonl")
	if err := run(ctx, "", out); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var it map[string]any
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		url, _ := it["url"].(string)
		if url == "" || got[url] {
			t.Errorf("product %q without url or stored twice", url)
		}
		got[url] = true
		if it["name"] == "" || it["price"] == "" || it["sku"] == "" {
			t.Errorf("product %s without name, price or sku: %v", url, it)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	want := demosite.New(1000).Products()
	if len(got) != len(want) {
		t.Fatalf("stored %d products, the shop has %d", len(got), len(want))
	}
}
