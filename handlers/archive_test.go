package handlers_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"go.uber.org/zap/zaptest"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/processors/warc"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// An archiver group created before the crawl archives every fetched page once, when it
// is stopped mid-crawl and restarted, although the crawl's responses are trimmed once
// acked (the archive group's acks count). (kill -9: TestArchiverKilledWritesEveryRecordOnce.)
func TestArchiveEveryPageOnceAcrossARestart(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	site := newChainSite(60, 0)
	base := serve(t, site)
	sp := titleSpider("arch", base)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := handlers.EnsureArchiveGroup(ctx, rdb, streams.NewLayout("arch", 1), ""); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// First archiver: stops after 20 pages, while the crawl runs.
	var acked atomic.Int64
	first, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := handlers.Archive(first, handlers.ArchiveConfig{Client: rdb, Crawl: "arch", Dir: dir, Consumer: "a1",
			Logger: zaptest.NewLogger(t), Subscriber: streams.SubscriberConfig{BlockTime: testBlockTime, ShutdownTimeout: time.Second},
			BeforeAck: func(*message.Message) {
				if acked.Add(1) == 20 {
					stop()
				}
			}})
		if err != nil {
			t.Errorf("first archiver: %v", err)
		}
	}()
	if err := runCrawl(ctx, t, rdb, sp, newMemSink(), nil); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// Second archiver, same consumer name: re-reads its pending entries, skips what
	// the files hold, archives the rest.
	if err := handlers.Archive(ctx, handlers.ArchiveConfig{Client: rdb, Crawl: "arch", Dir: dir, Consumer: "a1",
		UntilDone: true, Logger: zaptest.NewLogger(t), Subscriber: streams.SubscriberConfig{BlockTime: testBlockTime, MinIdle: time.Second, ClaimInterval: 200 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := warc.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.Type() == warc.TypeResponse {
				counts[rec.Header[warc.FieldTargetURI]]++
			}
		}
		f.Close()
	}
	fetched := 0
	for path, n := range site.counts() {
		if path == "/robots.txt" {
			continue
		}
		fetched += n
		if counts[base+path] != n {
			t.Errorf("%s: fetched %d times, archived %d times", path, n, counts[base+path])
		}
	}
	if len(counts) != 60 || fetched != 60 {
		t.Fatalf("archived %d pages, fetched %d; want 60 and 60", len(counts), fetched)
	}
	// The archiver, last to ack, trimmed them (default retention: until acked).
	if n := rdb.XLen(ctx, streams.NewKeys("arch").Responses).Val(); n != 0 {
		t.Errorf("responses stream holds %d entries once archived and parsed, want 0", n)
	}
}
