package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestCLIFirstHour: what a new user meets in the first hour, each with the exact words:
// a finished crawl run again, a crawl name mistyped, a crawl whose every request is
// dropped, a service waiting for a crawl nobody seeded, a service stopped while it
// starts, a flag of the wrong command.
func TestCLIFirstHour(t *testing.T) {
	t.Parallel()

	t.Run("a finished crawl", func(t *testing.T) {
		t.Parallel()
		srv := streamstest.Start(t)
		site := demosite.New(150)
		base := serveSite(t, site)
		spider := writeFile(t, "shop.yaml", spiderYAML(t, site, "shop", base))
		out := filepath.Join(t.TempDir(), "items.jsonl")
		crawl := append([]string{"crawl", spider, "--redis", srv.URL(), "--out", out}, fastRetries...)
		code, stdout, stderr := runCLI(t, crawlTimeout, nil, crawl...)
		if code != 0 {
			t.Fatalf("crawl: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		fields := fmt.Sprintf("  fields          product on %d pages: name %[1]d, price %[1]d, sku %[1]d, url %[1]d\n", demoItemPages(site))
		if !strings.Contains(stdout, fields) {
			t.Errorf("summary without the field counts %q:\n%s", fields, stdout)
		}
		// The log names a dead letter by the ID its entry had: dead list and dead retry
		// take it.
		logged := regexp.MustCompile(`moved to dead letters.*"entry_id": "(\d+-\d+)"`).FindStringSubmatch(stderr)
		if logged == nil {
			t.Fatalf("no dead letter logged with its entry_id:\n%s", stderr)
		}

		// Again: nothing to do, and it says so; the rate is this run's.
		code, stdout, stderr = runCLI(t, crawlTimeout, nil, crawl...)
		want := "crawl shop is already done; --fresh (Options.Fresh) or `streamcrawl reset --crawl shop` to crawl it again"
		if code != 0 || !strings.Contains(stderr, want) {
			t.Errorf("crawl of a finished crawl: exit %d, stderr %q; want exit 0 and %q", code, stderr, want)
		}
		if !regexp.MustCompile(`pages fetched   \d+ \(0 in this run, 0/s\)`).MatchString(stdout) {
			t.Errorf("summary of a run that fetched nothing:\n%s\nwant \"(0 in this run, 0/s)\"", stdout)
		}

		// status: the three host states, the fields.
		code, stdout, stderr = runCLI(t, 30*time.Second, nil, "status", "--redis", srv.URL(), "--crawl", "shop")
		for _, re := range []string{`(?m)^hosts\s+0 ready, 0 scheduled, 0 blocked\s+ready: may start a request now; scheduled: waiting for their delay or back-off; blocked: every slot taken \(per_host_concurrency in flight\)$`,
			`(?m)^ITEM TYPE\s+PAGES\s+FIELD\s+PAGES WITH A VALUE$`,
			fmt.Sprintf(`(?m)^product\s+%d\s+name\s+%[1]d$`, demoItemPages(site))} {
			if code != 0 || !regexp.MustCompile(re).MatchString(stdout) {
				t.Errorf("status: exit %d, no line %s in:\n%s%s", code, re, stdout, stderr)
			}
		}

		// dead list shows the entry ID the log gave; dead retry takes it.
		code, stdout, _ = runCLI(t, 30*time.Second, nil, "dead", "list", "--redis", srv.URL(), "--crawl", "shop")
		if code != 0 || !regexp.MustCompile(`(?m)^ID\s+ENTRY ID\s+STAGE\s+DELIVERIES\s+URL\s+ERROR$`).MatchString(stdout) ||
			!regexp.MustCompile(`(?m)^\d+-\d+\s+`+logged[1]+`\s`).MatchString(stdout) {
			t.Errorf("dead list: exit %d, want the logged entry ID %s in the ENTRY ID column:\n%s", code, logged[1], stdout)
		}
		code, stdout, stderr = runCLI(t, 30*time.Second, nil, "dead", "retry", "--redis", srv.URL(), "--crawl", "shop", "--id", logged[1])
		if want := "re-queued 1 dead letters of crawl shop"; code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("dead retry --id %s (the logged entry ID): exit %d, stdout %q, stderr %q; want %q", logged[1], code, stdout, stderr, want)
		}

		// A crawl name mistyped: every command gives the same answer and writes nothing.
		dir := t.TempDir()
		wantNo := `no crawl "nosuch" in Redis at ` + srv.Addr + ` (crawls there: shop; check --crawl and --redis)`
		for _, args := range [][]string{
			{"status"}, {"status", "--watch"}, {"dashboard", "--addr", "127.0.0.1:0"}, {"exporter", "--metrics-addr", "127.0.0.1:0"},
			{"process", "--group", "g", "--until-done", "--out", filepath.Join(dir, "p.jsonl")},
			{"dead", "list"}, {"dead", "retry"}, {"dead", "purge"}, {"reset"}, {"groups", "list"}, {"groups", "create", "--group", "g"},
			{"replay", "--stage", "parse", "--from", "0", "--out", filepath.Join(dir, "r.jsonl")},
			{"archive", "--out", dir}, {"archive", "--create-group"},
		} {
			code, stdout, stderr := runCLI(t, 30*time.Second, nil, append(args, "--redis", srv.URL(), "--crawl", "nosuch")...)
			if code != 1 || !strings.Contains(stderr, wantNo) || stdout != "" {
				t.Errorf("%v --crawl nosuch: exit %d, stdout %q, stderr %q; want exit 1 and %q", args, code, stdout, stderr, wantNo)
			}
		}
		if keys := scanKeys(t, srv.Client(), "*nosuch*"); len(keys) != 0 {
			t.Errorf("commands on a crawl that does not exist created %v", keys)
		}
		if files, _ := os.ReadDir(dir); len(files) != 0 {
			t.Errorf("commands on a crawl that does not exist created files: %v", files)
		}

		// The dashboard on a port in use says whose port it is.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addr := ln.Addr().String()
		code, _, stderr = runCLI(t, 30*time.Second, nil, "dashboard", "--redis", srv.URL(), "--crawl", "shop", "--addr", addr)
		if want := "dashboard: cannot listen on " + addr + " (--addr): listen tcp " + addr + ": bind: address already in use"; code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("dashboard on a port in use: exit %d, stderr %q; want %q", code, stderr, want)
		}
	})

	t.Run("every request dropped ends non-zero", func(t *testing.T) {
		t.Parallel()
		site := demosite.New(10)
		base := serveSite(t, site)
		// The site's spider without its allow_networks line: the guard drops the start URL.
		y := site.SpiderYAML("guarded", base)
		y = regexp.MustCompile(`(?m)^  allow_networks:.*\n`).ReplaceAllString(y, "")
		spider := writeFile(t, "guarded.yaml", y)
		code, stdout, stderr := runCLI(t, crawlTimeout, nil, "crawl", spider, "--out", filepath.Join(t.TempDir(), "g.jsonl"))
		want := "streamcrawl: handlers: crawl guarded fetched no page: every request was dropped: 1 blocked by the network guard " +
			"(loopback/private address blocked: set AllowPrivateNetworks / allow_networks"
		if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stdout, "crawl guarded: done=true") {
			t.Errorf("crawl whose start URL is blocked: exit %d, stdout %q, stderr %q; want exit 1, the summary and %q", code, stdout, stderr, want)
		}
	})

	t.Run("until-done on a crawl never seeded says so", func(t *testing.T) {
		t.Parallel()
		srv := streamstest.Start(t)
		spider := writeFile(t, "shop.yaml", demosite.New(10).SpiderYAML("shop", "http://127.0.0.1:1/"))
		p := startProc(t, "fetch", nil, "fetch", spider, "--until-done", "--redis", srv.URL())
		want := "nothing seeded yet: run `streamcrawl seed SPIDER.yaml` (or LPUSH shop:start_urls URL); waiting for start URLs"
		if !p.waitStderr(want, 60*time.Second) {
			t.Fatalf("fetch --until-done on a crawl never seeded did not say %q:\n%s", want, p.Stderr())
		}
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if code, ok := p.Wait(30 * time.Second); !ok || code != 0 || !strings.Contains(p.Stderr(), "fetch: interrupted; run the same command to resume") {
			t.Errorf("after SIGTERM: exit %d (exited %v); want 0 and the interrupted line", code, ok)
		}
	})

	t.Run("stage services stopped while they start", func(t *testing.T) {
		t.Parallel()
		srv := streamstest.Start(t)
		spider := writeFile(t, "shop.yaml", demosite.New(10).SpiderYAML("shop", "http://127.0.0.1:1/"))
		// SIGTERM as soon as each says it runs: its subscribers are still creating their
		// consumer groups; under load some are still connecting.
		var procs []*proc
		for _, stage := range []string{streams.StageFetch, streams.StageParse, streams.StageStore} {
			args := []string{stage, spider, "--redis", srv.URL()}
			if stage == streams.StageStore {
				args = append(args, "--out", filepath.Join(t.TempDir(), "o.jsonl"))
			}
			procs = append(procs, startProc(t, stage, nil, args...))
		}
		for _, p := range procs {
			if !p.waitStderr("stages running", 60*time.Second) {
				t.Fatalf("%s did not start:\n%s", p.name, p.Stderr())
			}
			if err := p.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range procs {
			code, ok := p.Wait(30 * time.Second)
			if want := p.name + ": interrupted; run the same command to resume"; !ok || code != 0 || !strings.Contains(p.Stderr(), want) {
				t.Errorf("%s after SIGTERM: exit %d (exited %v), want 0 and %q:\n%s", p.name, code, ok, want, p.Stderr())
			}
		}
	})

	t.Run("flags of the wrong command get a hint", func(t *testing.T) {
		t.Parallel()
		for _, cmd := range []string{"fetch", "parse", "store", "crawl", "seed"} {
			code, _, stderr := runInProcess(cmd, "--crawl", "shop")
			want := fmt.Sprintf("streamcrawl: unknown flag: --crawl (%s takes the spider file, which names the crawl: streamcrawl %[1]s SPIDER.yaml)\n", cmd)
			if code != 1 || stderr != want {
				t.Errorf("%s --crawl: exit %d, stderr (-want +got):\n-%s+%s", cmd, code, want, stderr)
			}
		}
		code, _, stderr := runInProcess("status", "--redis", "127.0.0.1:6379", "--crawl", "shop")
		if want := `streamcrawl: streams: redis url "127.0.0.1:6379" has no scheme: use redis://127.0.0.1:6379 (rediss:// for TLS, redis+cluster:// for a cluster)` + "\n"; code != 1 || stderr != want {
			t.Errorf("status with a URL without scheme: exit %d, stderr (-want +got):\n-%s+%s", code, want, stderr)
		}
	})
}

// TestProgressFirstLineRate: the first progress line's rate is over this run's work
// since it started, not 0 for want of an earlier sample.
func TestProgressFirstLineRate(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	ctx := context.Background()
	l := streams.NewLayout("rate", 1)
	rdb := srv.Client()
	if err := rdb.HSet(ctx, l.Global.Stats, "pages_fetched", 500).Err(); err != nil { // an earlier run's
		t.Fatal(err)
	}
	out := &lockedBuffer{}
	a := &App{Stderr: out, progressEvery: 200 * time.Millisecond}
	stop := a.startProgress(ctx, rdb, l)
	if err := rdb.HIncrBy(ctx, l.Global.Stats, "pages_fetched", 40).Err(); err != nil { // this run's
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	first, _, _ := strings.Cut(out.String(), "\n")
	m := regexp.MustCompile(`^progress: \d+s  pages 540  items 0  ([\d.]+) pages/s  queue 0  dead letters 0$`).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first progress line %q", first)
	}
	// 40 pages over at most the time to the line (200 ms, more on a loaded machine).
	if rate, _ := strconv.ParseFloat(m[1], 64); rate <= 0 || rate > 40/0.15 {
		t.Errorf("first line's rate %s pages/s, want 40 pages over the ~200 ms since the start", m[1])
	}
}

// lockedBuffer is a bytes.Buffer safe to write and read from two goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
