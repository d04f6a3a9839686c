package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// runInProcess runs the command line in this process (for commands that neither read
// the environment nor start stages).
func runInProcess(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCLI(t *testing.T) {
	t.Parallel()

	t.Run("help", func(t *testing.T) {
		t.Parallel()
		a := &App{}
		cmds := a.rootCommand().Commands()
		if len(cmds) < 10 {
			t.Fatalf("root has %d commands, want at least the 10 documented ones", len(cmds))
		}
		code, stdout, stderr := runInProcess("--help")
		if code != 0 || !strings.Contains(stdout, "Available Commands:") {
			t.Errorf("streamcrawl --help: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		for _, c := range cmds {
			name := c.Name()
			if name == "help" || name == "completion" {
				continue
			}
			if !strings.Contains(stdout, "  "+name+" ") {
				t.Errorf("streamcrawl --help does not list %s", name)
			}
			desc := c.Short // help shows the long description when there is one
			if c.Long != "" {
				desc, _, _ = strings.Cut(c.Long, "\n")
			}
			code, out, errOut := runInProcess(name, "--help")
			if code != 0 || !strings.Contains(out, "Usage:\n  streamcrawl "+name) || !strings.Contains(out, desc) || !strings.Contains(out, "Flags:") {
				t.Errorf("streamcrawl %s --help: exit %d, want 0 and usage naming the command; stdout:\n%s\nstderr:\n%s",
					name, code, out, errOut)
			}
		}
	})

	t.Run("no tooling in the operator's binary", func(t *testing.T) {
		t.Parallel()
		_, stdout, _ := runInProcess("--help")
		for _, name := range []string{"bench", "bench-broad", "bench-dedup", "bench-scale", "chaos"} {
			if strings.Contains(stdout, "  "+name+" ") {
				t.Errorf("streamcrawl --help lists %s, a command of streamcrawl-bench", name)
			}
			if code, _, stderr := runInProcess(name); code != 1 || !strings.Contains(stderr, `unknown command "`+name+`"`) {
				t.Errorf("streamcrawl %s: exit %d, stderr %q; want 1 and unknown command", name, code, stderr)
			}
		}
	})

	t.Run("bad spider YAML names file and line", func(t *testing.T) {
		t.Parallel()
		bad := writeFile(t, "bad.yaml", "name: shop\nstart_urls: [http://127.0.0.1:1/]\nsettings:\n  concurency: 3\n")
		for _, args := range [][]string{
			{"crawl", bad},
			{"seed", "--redis", "redis://127.0.0.1:1/0", "--spider", bad},
			{"fetch", "--redis", "redis://127.0.0.1:1/0", "--spider", bad},
		} {
			code, _, stderr := runInProcess(args...)
			want := bad + `:4: settings: unknown key "concurency"`
			if code != 1 || !strings.Contains(stderr, want) {
				t.Errorf("%s: exit %d, stderr %q; want exit 1 and an error containing %q", args[0], code, stderr, want)
			}
		}
		code, _, stderr := runInProcess("crawl", filepath.Join(t.TempDir(), "missing.yaml"))
		if code != 1 || !strings.Contains(stderr, "missing.yaml") {
			t.Errorf("crawl of a missing file: exit %d, stderr %q; want exit 1 naming the file", code, stderr)
		}
	})

	t.Run("no redis", func(t *testing.T) {
		t.Parallel()
		spider := writeFile(t, "shop.yaml", demosite.New(10).SpiderYAML("shop", "http://127.0.0.1:1/"))
		for _, args := range [][]string{
			{"fetch", "--spider", spider},
			{"parse", "--spider", spider},
			{"store", "--spider", spider},
			{"seed", "--spider", spider},
			{"status", "--crawl", "shop"},
			{"reset", "--crawl", "shop"},
		} {
			code, _, stderr := runCLI(t, 30*time.Second, nil, args...)
			want := "no Redis: pass --redis redis://host:port or set REDIS_URL"
			if code != 1 || !strings.Contains(stderr, want) {
				t.Errorf("%s without --redis or REDIS_URL: exit %d, stderr %q; want exit 1 and %q", args[0], code, stderr, want)
			}
		}
	})

	t.Run("unreachable redis fails fast", func(t *testing.T) {
		t.Parallel()
		addr := closedPort(t)
		spider := writeFile(t, "shop.yaml", demosite.New(10).SpiderYAML("shop", "http://127.0.0.1:1/"))
		for _, args := range [][]string{
			{"fetch", "--redis", "redis://" + addr + "/0", "--spider", spider},
			{"crawl", spider, "--redis", "redis://" + addr + "/0"},
			{"status", "--crawl", "shop"}, // through REDIS_URL
		} {
			start := time.Now()
			code, _, stderr := runCLI(t, 30*time.Second, []string{"REDIS_URL=redis://" + addr + "/0"}, args...)
			took := time.Since(start)
			want := "cannot reach redis at " + addr
			if code != 1 || !strings.Contains(stderr, want) {
				t.Errorf("%s with nothing at %s: exit %d, stderr %q; want exit 1 and %q", args[0], addr, code, stderr, want)
			}
			if took > 10*time.Second {
				t.Errorf("%s took %s to give up on a closed port, want well under 10s", args[0], took)
			}
		}
	})

	t.Run("finished crawl: status and seed again", func(t *testing.T) {
		t.Parallel()
		srv := streamstest.Start(t)
		site := demosite.New(200)
		base := serveSite(t, site)
		spider := writeFile(t, "shop.yaml", spiderYAML(t, site, "shop", base))
		out := filepath.Join(t.TempDir(), "items.jsonl")
		code, stdout, stderr := runCLI(t, crawlTimeout, nil, append([]string{"crawl", spider, "--redis", srv.URL(), "--out", out}, fastRetries...)...)
		if code != 0 {
			t.Fatalf("crawl: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		checkItems(t, readItems(t, out), site.ExpectedItems(base), "product", "url")

		// status --json, here through REDIS_URL.
		code, stdout, stderr = runCLI(t, 30*time.Second, []string{"REDIS_URL=" + srv.URL()}, "status", "--crawl", "shop", "--json")
		if code != 0 {
			t.Fatalf("status: exit %d, stderr:\n%s", code, stderr)
		}
		var st inspect.Status
		if err := json.Unmarshal([]byte(stdout), &st); err != nil {
			t.Fatalf("status --json is not JSON: %v\n%s", err, stdout)
		}
		pages := len(site.ReachableKind(false, demosite.HTML)) + len(site.ReachableKind(false, demosite.NonHTML))
		// An extra item page's item is dropped by the parse stage, or, for a twin parsed at
		// the same moment, skipped by the sink: the two counts add up.
		got := map[string]int64{"done": b2i(st.Done), "frontier": st.Frontier, "seen": st.Seen,
			"items_stored": st.ItemsStored, "dead_letters": st.DeadLetters, "pages_fetched": st.Stats["pages_fetched"],
			"items dropped or skipped": st.Stats["items_duplicate_dropped"] + st.Stats["items_duplicate"], "http_errors_final": st.Stats["http_errors_final"]}
		want := map[string]int64{"done": 1, "frontier": 0, "seen": int64(len(site.Reachable(false))),
			"items_stored": int64(len(site.Products())), "dead_letters": int64(len(site.ReachableKind(false, demosite.ServerError))),
			"pages_fetched": int64(pages), "items dropped or skipped": int64(demoItemPages(site) - len(site.Products())),
			"http_errors_final": int64(len(site.ReachableKind(false, demosite.NotFound)))}
		if d := diffInts(want, got); d != "" {
			t.Errorf("status --json (-want +got):\n%s\n%s", d, stdout)
		}
		for _, s := range st.Streams {
			for _, g := range s.Groups {
				if g.Pending != 0 || g.Lag != 0 {
					t.Errorf("status: group %s of %s has pending %d, lag %d; want 0, 0", g.Name, s.Name, g.Pending, g.Lag)
				}
			}
		}

		// seed again: everything is already seen.
		code, stdout, stderr = runCLI(t, 30*time.Second, nil, "seed", "--redis", srv.URL(), "--spider", spider)
		if want := "queued 0 of 1 URLs for crawl shop (1 already seen)"; code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("second seed: exit %d, stdout %q, stderr %q; want exit 0 and %q", code, stdout, stderr, want)
		}
		code, stdout, stderr = runCLI(t, 30*time.Second, nil, "seed", "--redis", srv.URL(), "--spider", spider,
			base+"p/1", base+"p/1#reviews", base+"never/seen")
		if want := "queued 1 of 3 URLs for crawl shop (2 already seen)"; code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("seed of 2 seen URLs and a new one: exit %d, stdout %q, stderr %q; want exit 0 and %q", code, stdout, stderr, want)
		}
	})

	t.Run("reset deletes every key of the crawl and only those", func(t *testing.T) {
		t.Parallel()
		srv := streamstest.Start(t)
		rdb := srv.Client()
		site := demosite.New(100)
		base := serveSite(t, site)
		// The site's own spider, default settings: whatever keys they make, reset removes.
		spider := writeFile(t, "shop.yaml", site.SpiderYAML("shop", base))
		out := filepath.Join(t.TempDir(), "items.jsonl")
		code, stdout, stderr := runCLI(t, crawlTimeout, nil, append([]string{"crawl", spider, "--redis", srv.URL(), "--out", out}, fastRetries...)...)
		if code != 0 {
			t.Fatalf("crawl: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		ctx := context.Background()
		if err := rdb.Set(ctx, "sc:{other}:stats", "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		before := scanKeys(t, rdb, "sc:{shop}:*")
		if len(before) < 5 {
			t.Fatalf("before reset the crawl has keys %v, want its streams, seen set, stats and meta", before)
		}
		code, stdout, stderr = runCLI(t, 30*time.Second, nil, "reset", "--redis", srv.URL(), "--crawl", "shop")
		if want := fmt.Sprintf("crawl shop reset: %d keys deleted", len(before)); code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("reset: exit %d, stdout %q, stderr %q; want exit 0 and %q", code, stdout, stderr, want)
		}
		if n, err := rdb.Exists(ctx, streams.NewKeys("shop").All()...).Result(); err != nil || n != 0 {
			t.Errorf("after reset EXISTS of the crawl's keys = %d (%v), want 0", n, err)
		}
		if left := scanKeys(t, rdb, "sc:{shop}:*"); len(left) != 0 {
			t.Errorf("after reset these keys of the crawl remain: %v (it had %v)", left, before)
		}
		if n, _ := rdb.Exists(ctx, "sc:{other}:stats").Result(); n != 1 {
			t.Errorf("reset of crawl shop deleted a key of crawl other")
		}
	})

	t.Run("seed twice", func(t *testing.T) {
		t.Parallel()
		srv := streamstest.Start(t)
		spider := writeFile(t, "news.yaml", demosite.New(10).SpiderYAML("news", "http://127.0.0.1:1/"))
		for i, want := range []string{"queued 1 of 1 URLs for crawl news (0 already seen)", "queued 0 of 1 URLs for crawl news (1 already seen)"} {
			code, stdout, stderr := runCLI(t, 30*time.Second, nil, "seed", "--redis", srv.URL(), "--spider", spider)
			if code != 0 || strings.TrimSpace(stdout) != want {
				t.Errorf("seed #%d: exit %d, stdout %q, stderr %q; want exit 0 and %q", i+1, code, stdout, stderr, want)
			}
		}
		if n := xlen(t, srv.Client(), streams.NewKeys("news").Requests); n != 1 {
			t.Errorf("requests stream has %d entries after seeding twice, want 1", n)
		}
	})

	t.Run("SIGTERM stops a stage with exit 0", func(t *testing.T) {
		t.Parallel()
		srv := streamstest.Start(t)
		spider := writeFile(t, "shop.yaml", demosite.New(10).SpiderYAML("shop", "http://127.0.0.1:1/"))
		p := startProc(t, "fetch", nil, "fetch", "--redis", srv.URL(), "--spider", spider, "--consumer", "f1")
		if !p.waitStderr("stages running", 30*time.Second) {
			t.Fatalf("fetch did not start")
		}
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		code, ok := p.Wait(30 * time.Second)
		if !ok || code != 0 {
			t.Errorf("fetch after SIGTERM: exit %d (exited=%v), want 0", code, ok)
		}
	})
}

// closedPort returns 127.0.0.1:port where nothing listens.
func closedPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// diffInts returns a (-want +got) listing of the differing values; "" when equal.
func diffInts(want, got map[string]int64) string {
	w := map[string]int{}
	g := map[string]int{}
	for k, v := range want {
		w[k+"="+itoa64(v)] = 1
	}
	for k, v := range got {
		g[k+"="+itoa64(v)] = 1
	}
	return diffCounts(w, g, 40)
}

func itoa64(v int64) string { return strconv.FormatInt(v, 10) }

// scanKeys returns the keys matching pattern, sorted.
func scanKeys(t testing.TB, rdb redis.UniversalClient, pattern string) []string {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), pattern).Result()
	if err != nil {
		t.Fatalf("KEYS %s: %v", pattern, err)
	}
	sort.Strings(keys)
	return keys
}
