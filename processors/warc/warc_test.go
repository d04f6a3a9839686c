package warc

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func page(i int) *Page {
	return &Page{Key: fmt.Sprintf("shop/responses/%d-0", i), URL: fmt.Sprintf("http://127.0.0.1:8080/p/%d?x=1", i),
		RequestHeader: http.Header{"User-Agent": {"streamcrawl"}}, RequestJSON: []byte(`{"v":1,"url":"u"}`),
		Status: 200, Header: http.Header{"Content-Type": {"text/html"}, "Content-Encoding": {"gzip"}},
		Body: []byte(fmt.Sprintf("<html><h1>page %d</h1>\r\n\r\n%s</html>", i, strings.Repeat("é", i))),
		Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// readAll reads every record of every .warc.gz file in dir.
func readAll(t *testing.T, dir string) []*Record {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	var out []*Record
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out = append(out, rec)
		}
		f.Close()
	}
	return out
}

func TestWriteReadRotateAndReopen(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, "arch-1", 2000)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if ok, err := w.WritePage(page(i)); err != nil || !ok {
			t.Fatalf("page %d: wrote %v, %v", i, ok, err)
		}
	}
	if ok, _ := w.WritePage(page(3)); ok {
		t.Fatal("a page already archived was written again")
	}
	w.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) < 2 {
		t.Fatalf("%d files for 20 pages at 2000 bytes per file; want rotation", len(files))
	}
	recs := readAll(t, dir)
	if len(recs) != 40 {
		t.Fatalf("read %d records, want 40", len(recs))
	}
	for i, rec := range recs {
		p := page(i / 2)
		req, res := p.Records()
		want := req
		if i%2 == 1 {
			want = res
		}
		if rec.ID() != want.ID() || string(rec.Block) != string(want.Block) || rec.Header[FieldTargetURI] != p.URL {
			t.Fatalf("record %d: got %s %q, want %s", i, rec.ID(), rec.Header[FieldTargetURI], want.ID())
		}
		if i%2 == 1 && rec.Header[FieldPayloadDigest] != Digest(p.Body) {
			t.Fatalf("record %d: payload digest %s, want %s", i, rec.Header[FieldPayloadDigest], Digest(p.Body))
		}
	}
	// A new writer on the directory knows every page.
	w2, err := Open(dir, "arch-1", 2000)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if w2.Len() != 20 {
		t.Fatalf("reopened index holds %d pages, want 20", w2.Len())
	}
	if ok, _ := w2.WritePage(page(7)); ok {
		t.Fatal("a reopened writer wrote an archived page again")
	}
}

// A writer killed mid-record leaves a torn gzip member; the next Open cuts it off, and
// the page it held is written again, once.
func TestTornTailIsCutOnOpen(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		w.WritePage(page(i))
	}
	name := w.f.Name()
	w.Close()
	// What a kill -9 mid-write leaves: the first 60% of the next page's records.
	scratch := t.TempDir()
	ws, _ := Open(scratch, "s", 0)
	ws.WritePage(page(3))
	torn, _ := os.ReadFile(ws.f.Name())
	ws.Close()
	f, _ := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(torn[:len(torn)*6/10])
	f.Close()

	w2, err := Open(dir, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if w2.Len() != 3 {
		t.Fatalf("index after a torn tail: %d pages, want 3", w2.Len())
	}
	if ok, err := w2.WritePage(page(3)); !ok || err != nil {
		t.Fatalf("torn page not written again: %v %v", ok, err)
	}
	w2.Close()
	if n := len(readAll(t, dir)); n != 8 {
		t.Fatalf("%d records after recovery, want 8 (4 pages, each once)", n)
	}
}

// Concurrent writers share fsyncs; every page is written once and every record reads
// back whole, across rotations.
func TestConcurrentWritersShareSyncs(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, "c", 20000)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				// Each page twice, from two goroutines: written once.
				if _, err := w.WritePage(page((g/2)*50 + i)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	w.Close()
	recs := readAll(t, dir)
	seen := map[string]int{}
	for _, r := range recs {
		seen[r.ID()]++
	}
	if len(recs) != 400 || len(seen) != 400 {
		t.Fatalf("%d records, %d distinct; want 400 (200 pages once)", len(recs), len(seen))
	}
}

// TestRenderedPageIsMarked: a page whose body a browser rendered says so on its
// response record (Streamcrawl-Rendered-By), read back as written; one fetched over
// HTTP has no such field.
func TestRenderedPageIsMarked(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	plain, rendered := page(1), page(2)
	rendered.RenderedBy = "HeadlessChrome/156.0.0.0"
	for _, p := range []*Page{plain, rendered} {
		if _, err := w.WritePage(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, rec := range readAll(t, dir) {
		if rec.Type() == TypeResponse {
			got[rec.Header[FieldTargetURI]] = rec.Header[FieldRenderedBy]
		}
	}
	if got[plain.URL] != "" || got[rendered.URL] != rendered.RenderedBy || len(got) != 2 {
		t.Errorf("Streamcrawl-Rendered-By by URL: %v", got)
	}
}
