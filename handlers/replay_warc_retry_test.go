package handlers_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/processors/warc"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// errDropped is what a dropped connection to the bucket looks like to a reader.
var errDropped = errors.New("connection reset by peer")

// dropsAfter reads r and fails with errDropped once n bytes were read.
type dropsAfter struct {
	r io.ReadCloser
	n int
}

func (d *dropsAfter) Read(p []byte) (int, error) {
	if d.n <= 0 {
		return 0, errDropped
	}
	if len(p) > d.n {
		p = p[:d.n]
	}
	k, err := d.r.Read(p)
	d.n -= k
	return k, err
}

func (d *dropsAfter) Close() error { return d.r.Close() }

// archivePages writes product pages of site (served at base) to one WARC file in dir
// and returns its path and the number of pages that give an item.
func archivePages(t *testing.T, dir, base string, pages int) string {
	t.Helper()
	w, err := warc.Open(dir, "retry", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= pages; i++ {
		u := fmt.Sprintf("%sp/%d", base, i)
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WritePage(&warc.Page{Key: fmt.Sprintf("retry/%d", i), URL: u, Status: res.StatusCode,
			Header: res.Header, Body: body, Date: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(paths) != 1 {
		t.Fatalf("%d WARC files written, want 1", len(paths))
	}
	return paths[0]
}

// A WARC file whose read fails part-way (a connection to the bucket dropped
// mid-object) is read again from its start and the records already replayed are
// skipped: every page is replayed once. A file whose reads keep failing ends the
// replay with the read error, after a few tries; a file that is not WARC fails at once.
func TestReplayWARCReadsAFileAgainAfterAFailedRead(t *testing.T) {
	t.Parallel()
	site := demosite.New(300)
	base := serve(t, site) + "/"
	sp, _, err := spiders.Parse("shop.yaml", []byte(site.SpiderYAML("wretry", base)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := archivePages(t, filepath.Join(dir, "warc"), base, 40)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	replay := func(name string, src handlers.WARCSource) (handlers.WARCReplayResult, []map[string]any, error) {
		out := filepath.Join(dir, name+".jsonl")
		sink, err := processors.OpenJSONL(out)
		if err != nil {
			t.Fatal(err)
		}
		res, err := handlers.ReplayWARC(ctx, []handlers.WARCSource{src}, sp, sink, nil)
		return res, readJSONL(t, out), err
	}

	whole, items, err := replay("whole", handlers.WARCFile(path))
	if err != nil || whole.Pages != 40 || len(items) == 0 {
		t.Fatalf("replay of the whole file: %+v, %d items, %v; want 40 pages and their items", whole, len(items), err)
	}

	var opens atomic.Int32
	flaky := handlers.WARCSource{Name: "s3://bucket/flaky.warc.gz", Open: func(context.Context) (io.ReadCloser, error) {
		r := io.NopCloser(bytes.NewReader(data))
		if opens.Add(1) == 1 {
			return &dropsAfter{r: r, n: len(data) * 2 / 3}, nil // the first read drops two thirds in
		}
		return r, nil
	}}
	res, got, err := replay("flaky", flaky)
	if err != nil {
		t.Fatalf("replay of a file whose first read dropped: %v", err)
	}
	if n := opens.Load(); n != 2 {
		t.Fatalf("the file was opened %d times, want 2 (read again once)", n)
	}
	if res != whole || len(got) != len(items) {
		t.Fatalf("replay with a dropped read: %+v and %d items, want %+v and %d as without (each page once)", res, len(got), whole, len(items))
	}
	seen := map[string]bool{}
	for _, it := range got {
		if k := it["_key"].(string); seen[k] {
			t.Fatalf("item %s stored twice", k)
		} else {
			seen[k] = true
		}
	}

	dead := handlers.WARCSource{Name: "s3://bucket/dead.warc.gz", Open: func(context.Context) (io.ReadCloser, error) {
		return &dropsAfter{r: io.NopCloser(bytes.NewReader(data)), n: len(data) / 2}, nil
	}}
	if _, _, err := replay("dead", dead); !errors.Is(err, errDropped) || !strings.Contains(err.Error(), "dead.warc.gz") {
		t.Fatalf("replay of a file whose reads always drop: %v; want the read error, naming the file", err)
	}

	garbage := filepath.Join(dir, "garbage.warc.gz")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("not a warc file\n"), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	var garbageOpens atomic.Int32
	src := handlers.WARCFile(garbage)
	open := src.Open
	src.Open = func(ctx context.Context) (io.ReadCloser, error) { garbageOpens.Add(1); return open(ctx) }
	if _, _, err := replay("garbage", src); err == nil || garbageOpens.Load() != 1 {
		t.Fatalf("replay of a file that is not WARC: %v after %d opens; want an error after one", err, garbageOpens.Load())
	}
}
