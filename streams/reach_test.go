package streams_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestReachTellsALossOnceAndQuietsItsWarnings cuts a client off from a real
// redis-server (a fault proxy that drops everything) for 3 s: the Reach logs one line
// when the loss starts and one when Redis answers again; meanwhile the warnings whose
// error is a failure to reach Redis go to debug and are counted, while other warnings
// and every error are written as they are. Before and after, nothing is quieted. The
// loss and its end are seen within 10 s, though the client waits 30 s for a reply.
func TestReachTellsALossOnceAndQuietsItsWarnings(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	proxy := streamstest.StartFaultProxy(t, srv.Addr)
	// A call through the partition waits for the client's read timeout, 30 s: the
	// Reach's own timeout must tell the loss (and its end) long before.
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr, ReadTimeout: 30 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })

	core, logs := observer.New(zapcore.InfoLevel)
	reach := &streams.Reach{Client: rdb, Logger: zap.New(core).Named("reach"), Interval: 50 * time.Millisecond, Timeout: 300 * time.Millisecond}
	log := zap.New(core).WithOptions(zap.WrapCore(reach.Quiet))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- reach.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	redisDown := fmt.Errorf("xack: %w", context.DeadlineExceeded)
	siteDown := &url.Error{Op: "Get", URL: "http://127.0.0.1:1/", Err: context.DeadlineExceeded}
	emit := func(phase string) {
		log.Warn(phase+": xack failed; retrying", zap.Error(redisDown))
		log.Warn(phase+": fetch failed", zap.Error(siteDown))
		log.Warn(phase+": reclaim failed", zap.Error(errors.New("ERR unknown command")))
		log.Error(phase+": component stopped", zap.Error(redisDown))
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s; log:\n%s", what, dump(logs))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	emit("before")
	if err := proxy.Partition(); err != nil {
		t.Fatal(err)
	}
	waitFor("the loss is told", func() bool { return logs.FilterMessageSnippet("lost Redis").Len() == 1 && reach.Lost() })
	for range 3 {
		emit("during")
	}
	time.Sleep(3 * time.Second)
	if err := proxy.Heal(); err != nil {
		t.Fatal(err)
	}
	waitFor("Redis back", func() bool { return logs.FilterMessageSnippet("Redis back").Len() == 1 && !reach.Lost() })
	emit("after")

	var got []string
	for _, e := range logs.All() {
		line := e.Level.CapitalString() + " " + e.Message
		if q, ok := e.ContextMap()["failures_quieted"]; ok && strings.HasPrefix(e.Message, "Redis back") {
			line += fmt.Sprintf(" (%v quieted)", q)
		}
		got = append(got, line)
	}
	want := []string{
		"WARN before: xack failed; retrying", "WARN before: fetch failed", "WARN before: reclaim failed", "ERROR before: component stopped",
		"ERROR lost Redis: it does not answer; every stage waits for it and retries, nothing is dropped (the failed calls are logged at debug until it is back)",
	}
	for range 3 {
		want = append(want, "WARN during: fetch failed", "WARN during: reclaim failed", "ERROR during: component stopped")
	}
	want = append(want, "WARN Redis back; the stages go on (3 quieted)",
		"WARN after: xack failed; retrying", "WARN after: fetch failed", "WARN after: reclaim failed", "ERROR after: component stopped")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func dump(logs *observer.ObservedLogs) string {
	var b strings.Builder
	for _, e := range logs.All() {
		fmt.Fprintf(&b, "%s %s %v\n", e.Level.CapitalString(), e.Message, e.ContextMap())
	}
	return b.String()
}

// TestReachQuietKeepsEachCoreLevel: a log wrapped by Quiet still writes each entry only
// to the parts of a tee whose level takes it.
func TestReachQuietKeepsEachCoreLevel(t *testing.T) {
	t.Parallel()
	info, infoLogs := observer.New(zapcore.InfoLevel)
	warn, warnLogs := observer.New(zapcore.WarnLevel)
	reach := &streams.Reach{}
	log := zap.New(zapcore.NewTee(info, warn)).WithOptions(zap.WrapCore(reach.Quiet))
	log.Debug("debug")
	log.Info("info")
	log.Warn("warn", zap.Error(context.DeadlineExceeded))
	if got := dump(infoLogs); got != "INFO info map[]\nWARN warn map[error:context deadline exceeded]\n" {
		t.Errorf("info core got:\n%s", got)
	}
	if got := dump(warnLogs); got != "WARN warn map[error:context deadline exceeded]\n" {
		t.Errorf("warn core got:\n%s", got)
	}
}
