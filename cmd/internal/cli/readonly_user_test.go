package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// viewerACL returns the arguments of the ACL SETUSER line that docs/operations/monitoring.md
// gives for a read-only user, so that the test checks what the docs tell users to type.
func viewerACL(t *testing.T) []any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "operations", "monitoring.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "redis-cli ACL SETUSER ")
		if !ok {
			continue
		}
		args := []any{"ACL", "SETUSER"}
		for _, w := range strings.Fields(rest) {
			args = append(args, strings.Trim(w, "'"))
		}
		return args
	}
	t.Fatal("docs/operations/monitoring.md has no `redis-cli ACL SETUSER` line")
	return nil
}

// dashboardURLRE finds the address the dashboard logs.
var dashboardURLRE = regexp.MustCompile(`"url": "(http://[^"]+)"`)

// TestReadOnlyUserWatchesACrawl: a crawl run by the default user is watched by a user
// with only the ACL the docs give (read commands, EVALSHA_RO/EVAL_RO, PING, INFO on the
// crawl's keys) through status, the exporter and the dashboard, with the figures the
// default user sees and no command refused; that user's writes are refused, the
// dashboard's retry of a dead letter included.
func TestReadOnlyUserWatchesACrawl(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	site := demosite.New(60)
	base := serveSite(t, site)
	spider := writeFile(t, "shop.yaml", spiderYAML(t, site, "shop", base))
	out := filepath.Join(t.TempDir(), "items.jsonl")
	if code, stdout, stderr := runCLI(t, crawlTimeout, nil, append([]string{"crawl", spider, "--redis", srv.URL(), "--out", out}, fastRetries...)...); code != 0 {
		t.Fatalf("crawl: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, fullStatus, stderr := runCLI(t, 30*time.Second, nil, "status", "--crawl", "shop", "--redis", srv.URL(), "--json")
	if code != 0 {
		t.Fatalf("status as the default user: exit %d: %s", code, stderr)
	}
	var full inspect.Status
	if err := json.Unmarshal([]byte(fullStatus), &full); err != nil {
		t.Fatal(err)
	}
	if full.Stats["pages_fetched"] == 0 || full.DeadLetters == 0 {
		t.Fatalf("the crawl fetched %d pages and left %d dead letters, want some of each", full.Stats["pages_fetched"], full.DeadLetters)
	}

	// A revisit scheduled in 10 minutes: the scripts then read the Redis clock.
	k := streams.NewKeys("shop")
	minute := time.Now().Add(10*time.Minute).Unix() / 60
	if err := rdb.ZAdd(ctx, k.Revisits, redis.Z{Score: float64(minute), Member: minute}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Do(ctx, viewerACL(t)...).Err(); err != nil {
		t.Fatalf("ACL line of the docs: %v", err)
	}
	if err := rdb.Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil {
		t.Fatal(err)
	}
	viewer := "redis://viewer:viewer-password@" + srv.Addr

	// status: the same figures, as text and as JSON.
	code, viewText, stderr := runCLI(t, 30*time.Second, nil, "status", "--crawl", "shop", "--redis", viewer)
	if code != 0 || !strings.Contains(viewText, "done=true") {
		t.Errorf("status as the viewer: exit %d\nstdout:\n%s\nstderr:\n%s", code, viewText, stderr)
	}
	code, viewJSON, stderr := runCLI(t, 30*time.Second, nil, "status", "--crawl", "shop", "--redis", viewer, "--json")
	var got inspect.Status
	if code != 0 || json.Unmarshal([]byte(viewJSON), &got) != nil {
		t.Fatalf("status --json as the viewer: exit %d\nstdout:\n%s\nstderr:\n%s", code, viewJSON, stderr)
	}
	if got.Stats["pages_fetched"] != full.Stats["pages_fetched"] || got.DeadLetters != full.DeadLetters || got.ItemsStored != full.ItemsStored || !got.Done {
		t.Errorf("status as the viewer: pages %d, dead %d, items %d, done %v; the default user sees %d, %d, %d, done",
			got.Stats["pages_fetched"], got.DeadLetters, got.ItemsStored, got.Done, full.Stats["pages_fetched"], full.DeadLetters, full.ItemsStored)
	}

	// exporter: /metrics and /readyz.
	exp := startProc(t, "exporter-viewer", nil, "exporter", "--crawl", "shop", "--redis", viewer, "--metrics-addr", "127.0.0.1:0")
	addr := metricsAddr(t, exp)
	m := scrape(t, addr)
	if v := m.sum("streamcrawl_crawl_counter", `counter="pages_fetched"`); v != float64(full.Stats["pages_fetched"]) {
		t.Errorf("exporter as the viewer: pages_fetched %v, want %d", v, full.Stats["pages_fetched"])
	}
	if v := m.sum("streamcrawl_crawl_scrape_ok"); v != 1 {
		t.Errorf("exporter as the viewer: streamcrawl_crawl_scrape_ok %v, want 1", v)
	}
	if v := m.sum("streamcrawl_redis_used_memory_bytes"); v <= 0 {
		t.Errorf("exporter as the viewer: streamcrawl_redis_used_memory_bytes %v, want Redis's memory", v)
	}
	if code, body := httpGet(t, "http://"+addr+"/readyz"); code != http.StatusOK {
		t.Errorf("exporter /readyz as the viewer: %d %q", code, body)
	}

	// dashboard: its JSON, its dead letters, its /metrics.
	dash := startProc(t, "dashboard-viewer", nil, "dashboard", "--crawl", "shop", "--redis", viewer, "--addr", "127.0.0.1:0")
	if !dash.waitStderr(`"url"`, 60*time.Second) {
		t.Fatalf("dashboard as the viewer logged no url:\n%s", dash.Stderr())
	}
	ui := dashboardURLRE.FindStringSubmatch(dash.Stderr())[1]
	var st struct {
		History []struct {
			Pages int64 `json:"pages"`
			Dead  int64 `json:"dead"`
			Done  bool  `json:"done"`
		} `json:"history"`
		Error string `json:"error"`
	}
	for deadline := time.Now().Add(60 * time.Second); len(st.History) == 0 && time.Now().Before(deadline); {
		code, body := httpGet(t, ui+"api/status")
		if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil {
			t.Fatalf("dashboard /api/status as the viewer: %d %q", code, body)
		}
		if st.Error != "" {
			t.Fatalf("dashboard /api/status as the viewer: error %q", st.Error)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(st.History); n == 0 || st.History[n-1].Pages != full.Stats["pages_fetched"] || st.History[n-1].Dead != full.DeadLetters || !st.History[n-1].Done {
		t.Errorf("dashboard as the viewer: %+v, want pages %d, dead %d, done", st, full.Stats["pages_fetched"], full.DeadLetters)
	}
	code, body := httpGet(t, ui+"api/dead")
	var dead []struct {
		ID string `json:"id"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &dead) != nil || int64(len(dead)) != full.DeadLetters {
		t.Fatalf("dashboard /api/dead as the viewer: %d %q, want %d dead letters", code, body, full.DeadLetters)
	}
	if code, body := httpGet(t, ui+"metrics"); code != http.StatusOK || !strings.Contains(body, "streamcrawl_crawl_counter") {
		t.Errorf("dashboard /metrics as the viewer: %d", code)
	}

	// Nothing the three did was refused.
	log, err := rdb.Do(ctx, "ACL", "LOG").Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 0 {
		t.Errorf("the viewer was refused %d times while watching: %v", len(log), log)
	}

	// Its writes are: directly, and the dashboard's retry.
	vc := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "viewer", Password: "viewer-password"})
	defer vc.Close()
	for _, cmd := range [][]any{{"HSET", k.Stats, "pages_fetched", 0}, {"XADD", k.Requests, "*", "payload", "x"}, {"DEL", k.Dead}, {"EVAL_RO", "return redis.call('DEL', KEYS[1])", 1, k.Dead}} {
		if err := vc.Do(ctx, cmd...).Err(); err == nil {
			t.Errorf("the viewer ran %v", cmd)
		}
	}
	res, err := http.Post(ui+"api/dead/retry", "application/json", strings.NewReader(`{"ids": ["`+dead[0].ID+`"]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode == http.StatusOK || !strings.Contains(string(b), "NOPERM") {
		t.Errorf("dashboard retry as the viewer: %d %q, want it refused with NOPERM", res.StatusCode, b)
	}
	if n, err := rdb.XLen(ctx, k.Dead).Result(); err != nil || n != full.DeadLetters {
		t.Errorf("dead letters after the viewer's writes: %d %v, want %d", n, err, full.DeadLetters)
	}
}

// httpGet returns the status and body of a GET of url.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
