package warcs3_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/processors/warc"
	"github.com/streamcrawl/streamcrawl/processors/warc/warctest"
	"github.com/streamcrawl/streamcrawl/processors/warcs3"
	"github.com/streamcrawl/streamcrawl/processors/warcs3/warcs3test"
)

func page(i int) *warc.Page {
	return &warc.Page{Key: fmt.Sprintf("shop/responses/%d-0", i), URL: fmt.Sprintf("http://127.0.0.1:8080/p/%d", i),
		RequestHeader: http.Header{"User-Agent": {"streamcrawl"}}, Status: 200,
		Header: http.Header{"Content-Type": {"text/html"}},
		Body:   []byte(fmt.Sprintf("<html><h1>page %d</h1>%0200d</html>", i, i)),
		Date:   time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// bucketRecords downloads every WARC object of the prefix to a directory and returns
// the response record IDs in them (our reader), and the downloaded files.
func bucketRecords(t *testing.T, st *warcs3.Store) (ids []string, files []string) {
	t.Helper()
	ctx := t.Context()
	keys, err := st.Files(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, key := range keys {
		o, err := st.Open(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, path.Base(key))
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, o); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		o.Close()
		f.Close()
		files = append(files, name)
		r, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		wr, err := warc.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := wr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if rec.Type() == warc.TypeResponse {
				ids = append(ids, rec.ID())
			}
		}
		r.Close()
	}
	return ids, files
}

// bucket starts an S3 server for the test and returns it with a store on prefix.
func bucket(t *testing.T, prefix string) (*warcs3test.Server, *warcs3.Store) {
	t.Helper()
	srv := warcs3test.Start(t)
	st, err := warcs3.New(t.Context(), srv.Config(prefix))
	if err != nil {
		t.Fatal(err)
	}
	return srv, st
}

// spooled opens a writer with opts on a new spool whose closed files go to st.
func spooled(t *testing.T, st *warcs3.Store, opts warc.Options) (w *warc.Writer, sp *warcs3.Spool, spool string) {
	t.Helper()
	spool = t.TempDir()
	sp = warcs3.NewSpool(st, nil)
	opts.Closed = sp.Closed
	w, err := warc.OpenWith(spool, "a", opts)
	if err != nil {
		t.Fatal(err)
	}
	return w, sp, spool
}

// open opens a writer on spool that uploads to st, as the archiver does.
func open(t *testing.T, ctx context.Context, st *warcs3.Store, spool string) (*warc.Writer, *warcs3.Spool) {
	t.Helper()
	ids, names, err := st.Index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sp := warcs3.NewSpool(st, nil)
	w, err := warc.OpenWith(spool, "shop-a1", warc.Options{MaxFileSize: 2000, Closed: sp.Closed, Known: ids,
		Taken: func(n string) bool { return names[n] }})
	if err != nil {
		t.Fatal(err)
	}
	return w, sp
}

// Pages written through a spool end in the bucket, once each, in files rotated by
// size, readable by our reader and by warcio; the spool is left empty; a writer opened
// again (a restart) skips every page the bucket holds and never reuses a file name.
func TestSpoolUploadsRotatedFilesOnceAcrossARestart(t *testing.T) {
	_, st := bucket(t, "crawls/shop")
	ctx := t.Context()
	spool := t.TempDir()
	w, sp := open(t, ctx, st, spool)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); sp.Run(runCtx) }()
	for i := 0; i < 30; i++ {
		if wrote, err := w.WritePage(page(i)); err != nil || !wrote {
			t.Fatalf("page %d: wrote %v, %v", i, wrote, err)
		}
	}
	stop()
	<-done
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sp.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(spool, "*.warc.gz")); len(left) != 0 {
		t.Fatalf("spool still holds %v after the drain", left)
	}
	ids, files := bucketRecords(t, st)
	if len(ids) != 30 || len(files) < 3 {
		t.Fatalf("bucket holds %d response records in %d files, want 30 in several", len(ids), len(files))
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("record %s twice in the bucket", id)
		}
		seen[id] = true
	}
	if recs := warctest.Warcio(t, files...); len(recs) != 60 {
		t.Fatalf("warcio read %d records, want 60", len(recs))
	}

	// Restart: every page is known, and new pages go to new file names.
	w, sp = open(t, ctx, st, spool)
	for i := 0; i < 30; i++ {
		if wrote, err := w.WritePage(page(i)); err != nil || wrote {
			t.Fatalf("page %d written again after a restart (wrote %v, %v)", i, wrote, err)
		}
	}
	for i := 30; i < 35; i++ {
		if wrote, err := w.WritePage(page(i)); err != nil || !wrote {
			t.Fatalf("page %d: wrote %v, %v", i, wrote, err)
		}
	}
	w.Close()
	if err := sp.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	ids, files2 := bucketRecords(t, st)
	if len(ids) != 35 || len(files2) <= len(files) {
		t.Fatalf("after the restart the bucket holds %d records in %d files (before %d files), want 35 in more files",
			len(ids), len(files2), len(files))
	}
}

// An archiver that died after uploading a file but before removing it from the spool
// (or before its index object went up) uploads it again at restart under the same key:
// an overwrite, no record twice.
func TestUploadCutShortIsRedoneAsAnOverwrite(t *testing.T) {
	_, st := bucket(t, "p")
	ctx := t.Context()
	spool := t.TempDir()
	w, err := warc.OpenWith(spool, "shop-a1", warc.Options{MaxFileSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		w.WritePage(page(i))
	}
	w.Close()
	files, _ := filepath.Glob(filepath.Join(spool, "*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("%d files, want 1", len(files))
	}
	keep := filepath.Join(t.TempDir(), "copy")
	data, _ := os.ReadFile(files[0])
	os.WriteFile(keep, data, 0o644)
	if err := st.Upload(ctx, warc.ClosedFile{Path: files[0]}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(files[0], data, 0o644) // as if the process died before the remove

	w2, sp := open(t, ctx, st, spool)
	if sp.Pending() != 1 {
		t.Fatalf("%d files queued at restart, want the one left in the spool", sp.Pending())
	}
	if wrote, _ := w2.WritePage(page(3)); wrote {
		t.Fatal("a page of the file left in the spool was written again")
	}
	w2.Close()
	if err := sp.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	ids, keys := bucketRecords(t, st)
	sort.Strings(ids)
	if len(keys) != 1 || len(ids) != 10 {
		t.Fatalf("bucket holds %d records in %d objects, want 10 in 1", len(ids), len(keys))
	}
	known, _, err := st.Index(ctx)
	if err != nil || len(known) != 10 {
		t.Fatalf("index lists %d records (%v), want 10", len(known), err)
	}
}

// An unreachable bucket leaves the files in the spool, with an error.
func TestUnreachableBucketKeepsTheSpool(t *testing.T) {
	srv, st := bucket(t, "p")
	ctx := t.Context()
	w, sp, spool := spooled(t, st, warc.Options{})
	w.WritePage(page(1))
	w.Close()
	srv.Close()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := sp.Drain(dctx); err == nil {
		t.Fatal("drain to an unreachable bucket succeeded")
	}
	if left, _ := filepath.Glob(filepath.Join(spool, "*.warc.gz")); len(left) != 1 || sp.Pending() != 1 {
		t.Fatalf("spool holds %d files (%d queued) after a failed upload, want 1", len(left), sp.Pending())
	}
}

// A spool is locked by one archiver at a time.
func TestSpoolLock(t *testing.T) {
	dir := t.TempDir()
	unlock, err := warcs3.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := warcs3.Lock(dir); err == nil {
		t.Fatal("a second lock on the spool succeeded")
	}
	unlock()
	unlock2, err := warcs3.Lock(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}

// A queued file removed from the spool by someone else is skipped, not retried forever
// in front of the files behind it.
func TestVanishedSpoolFileDoesNotBlockTheQueue(t *testing.T) {
	_, st := bucket(t, "p")
	ctx := t.Context()
	w, sp, spool := spooled(t, st, warc.Options{MaxFileSize: 1})
	for i := 0; i < 3; i++ {
		w.WritePage(page(i)) // one file each
	}
	w.Close()
	files, _ := filepath.Glob(filepath.Join(spool, "*.warc.gz"))
	if len(files) != 3 || sp.Pending() != 3 {
		t.Fatalf("%d files, %d queued; want 3 and 3", len(files), sp.Pending())
	}
	os.Remove(files[0])
	if err := sp.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if ids, _ := bucketRecords(t, st); len(ids) != 2 {
		t.Fatalf("bucket holds %d pages, want the 2 of the files left", len(ids))
	}
}
