package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// metricsAddrRE finds the address a process serves its metrics on, in its log.
var metricsAddrRE = regexp.MustCompile(`serving metrics.*"addr": "([^"]+)"`)

// metricsAddr waits for p to log the address of its metrics endpoint.
func metricsAddr(t testing.TB, p *proc) string {
	t.Helper()
	if !p.waitStderr("serving metrics", 60*time.Second) {
		t.Fatalf("%s: no metrics endpoint logged", p.name)
	}
	m := metricsAddrRE.FindStringSubmatch(p.Stderr())
	if m == nil {
		t.Fatalf("%s: metrics address not found in %q", p.name, tail(p.Stderr(), 2000))
	}
	return m[1]
}

// series is one scrape: the value of each series, keyed by its text
// (`name{label="v",...}`).
type series map[string]float64

// scrape reads addr's /metrics.
func scrape(t testing.TB, addr string) series {
	t.Helper()
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", addr, res.Status)
	}
	out := series{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape %s: bad line %q", addr, line)
		}
		out[line[:i]] = v
	}
	return out
}

// sum adds the series of metric name whose labels include every label (`k="v"`).
func (s series) sum(name string, labels ...string) float64 {
	var n float64
	for k, v := range s {
		base, rest, _ := strings.Cut(k, "{")
		if base != name {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(rest, l)
		}
		if ok {
			n += v
		}
	}
	return n
}

// httpStatus returns the status code of GET url.
func httpStatus(t testing.TB, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestMetricsAgreeWithStatus runs a crawl with separate fetch, parse and store
// processes and an exporter, all serving metrics, and checks that what they export
// agrees with `status`: during the crawl no counter in Redis runs ahead of the sum the
// processes export (they count at once and flush to Redis once a second), and once the
// crawl is done, pages, items and dead letters agree exactly within a flush.
func TestMetricsAgreeWithStatus(t *testing.T) {
	t.Parallel()
	site := demosite.New(600)
	c := newCluster(t, "shop", site)
	c.seed()
	start := func(stage, consumer string) *proc {
		args := []string{stage, "--redis", c.srv.URL(), "--spider", c.spider, "--consumer", consumer,
			"--metrics-addr", "127.0.0.1:0"}
		args = append(args, fastRetries...)
		if stage == streams.StageStore {
			args = append(args, "--out", c.out)
		}
		return startProc(t, consumer, nil, args...)
	}
	procs := map[string]*proc{
		"fetch-1": start(streams.StageFetch, "fetch-1"), "fetch-2": start(streams.StageFetch, "fetch-2"),
		"parse-1": start(streams.StageParse, "parse-1"), "store-1": start(streams.StageStore, "store-1"),
		"exporter": startProc(t, "exporter", nil, "exporter", "--redis", c.srv.URL(), "--crawl", c.name, "--metrics-addr", "127.0.0.1:0"),
	}
	addrs := map[string]string{}
	for name, p := range procs {
		addrs[name] = metricsAddr(t, p)
	}
	total := func(scrapes map[string]series, name string, labels ...string) int64 {
		var n float64
		for proc, s := range scrapes {
			if proc != "exporter" {
				n += s.sum(name, labels...)
			}
		}
		return int64(n)
	}
	scrapeAll := func() map[string]series {
		out := map[string]series{}
		for name, addr := range addrs {
			out[name] = scrape(t, addr)
		}
		return out
	}
	figures := func(st *inspect.Status, m map[string]series) (want, got map[string]int64) {
		want = map[string]int64{"pages": st.Stats["pages_fetched"], "items": st.ItemsStored, "dead letters": st.DeadLetters,
			"exporter pages": st.Stats["pages_fetched"], "exporter items": st.ItemsStored, "exporter dead letters": st.DeadLetters}
		ex := m["exporter"]
		got = map[string]int64{
			"pages":                 total(m, "streamcrawl_events_total", `event="pages_fetched"`),
			"items":                 total(m, "streamcrawl_items_stored_total"),
			"dead letters":          total(m, "streamcrawl_dead_letters_total"),
			"exporter pages":        int64(ex.sum("streamcrawl_crawl_counter", `counter="pages_fetched"`)),
			"exporter items":        int64(ex.sum("streamcrawl_crawl_items_stored")),
			"exporter dead letters": int64(ex.sum("streamcrawl_crawl_dead_letters")),
		}
		return want, got
	}

	// During the crawl: Redis's counters never run ahead of what the processes export.
	deadline := time.Now().Add(crawlTimeout)
	checks := 0
	for {
		st := readStatus(t, c.rdb, c.name)
		m := scrapeAll()
		if got := total(m, "streamcrawl_events_total", `event="pages_fetched"`); st.Stats["pages_fetched"] > got {
			t.Fatalf("status has %d pages fetched, the fetchers' metrics only %d", st.Stats["pages_fetched"], got)
		}
		if got := total(m, "streamcrawl_items_stored_total"); st.ItemsStored > got {
			t.Fatalf("status has %d items stored, the store's metrics only %d", st.ItemsStored, got)
		}
		checks++
		if st.Done {
			break
		}
		if time.Now().After(deadline) {
			logStatus(t, c.rdb, c.name)
			t.Fatalf("crawl not done after %s", crawlTimeout)
		}
		time.Sleep(300 * time.Millisecond)
	}

	// Done: the figures agree once the last counters are flushed (every second).
	var want, got map[string]int64
	settle := time.Now()
	for {
		want, got = figures(readStatus(t, c.rdb, c.name), scrapeAll())
		if diffInts(want, got) == "" || time.Since(settle) > 30*time.Second {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if d := diffInts(want, got); d != "" {
		t.Errorf("metrics disagree with status after the crawl (-status +metrics):\n%s", d)
	}
	t.Logf("%d checks during the crawl; agreed %s after done: %v", checks, time.Since(settle).Round(time.Millisecond), got)
	if got["pages"] < int64(len(site.Products())) || got["dead letters"] == 0 {
		t.Errorf("crawl too small to show anything: %v", got)
	}

	m := scrapeAll()
	if n := m["parse-1"].sum("streamcrawl_stage_messages_total", `stage="parse"`); int64(n) < got["pages"] {
		t.Errorf("parse stage handled %v messages, want >= %d pages", n, got["pages"])
	}
	if n := m["fetch-1"].sum("streamcrawl_fetch_duration_seconds_count") + m["fetch-2"].sum("streamcrawl_fetch_duration_seconds_count"); int64(n) < got["pages"] {
		t.Errorf("fetch latency observed %v times, want >= %d", n, got["pages"])
	}
	if n := m["exporter"].sum("streamcrawl_group_consumers", `group="fetch"`); n != 2 {
		t.Errorf("exporter shows %v fetch consumers, want 2", n)
	}
	for name, addr := range addrs {
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, body := httpStatus(t, "http://"+addr+path); code != http.StatusOK {
				t.Errorf("%s %s: %d %s", name, path, code, body)
			}
		}
	}
	// Redis gone: every process is still alive but none is ready.
	c.srv.Kill()
	for name, addr := range addrs {
		if code, body := httpStatus(t, "http://"+addr+"/healthz"); code != http.StatusOK {
			t.Errorf("%s /healthz with Redis down: %d %s, want 200", name, code, body)
		}
		if code, body := httpStatus(t, "http://"+addr+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "redis") {
			t.Errorf("%s /readyz with Redis down: %d %q, want 503 naming Redis", name, code, body)
		}
	}
}

// TestGroupsReady: a stage service is ready only once its group exists on its input.
func TestGroupsReady(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	ready := groupsReady(rdb, "shop", streams.StageFetch)
	if err := ready(ctx); err == nil || !strings.Contains(err.Error(), "group fetch of sc:{shop}:requests missing") {
		t.Errorf("without the group: %v, want it named missing", err)
	}
	if err := rdb.XGroupCreateMkStream(ctx, streams.NewKeys("shop").Requests, streams.StageFetch, "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := ready(ctx); err != nil {
		t.Errorf("with the group: %v, want ready", err)
	}
}
