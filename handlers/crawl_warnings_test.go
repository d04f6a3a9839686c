package handlers_test

import (
	"context"
	"net"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// TestCrawlLogsSpiderWarnings: Crawl logs the warnings its spider's loader noticed
// (deprecated keys) at WARN, once, when it starts: before it reaches Redis.
func TestCrawlLogsSpiderWarnings(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens: Crawl fails to connect after its start
	sp, _, err := spiders.Parse("old.yaml", []byte("name: old\nstart_urls: [http://127.0.0.1:1/]\nsettings:\n  dedup_expire_after: 1h\n"))
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.WarnLevel)
	if _, err := handlers.Crawl(context.Background(), sp, handlers.Options{Redis: "redis://" + addr + "/0", Logger: zap.New(core)}); err == nil {
		t.Fatal("Crawl with nothing at its Redis URL: no error")
	}
	want := "old.yaml:4: settings.dedup_expire_after is deprecated: write settings.revisit.forget_after"
	if n := logs.FilterMessage(want).FilterLevelExact(zapcore.WarnLevel).Len(); n != 1 {
		t.Errorf("%q logged at WARN %d times, want once; logs: %v", want, n, logs.All())
	}
}
