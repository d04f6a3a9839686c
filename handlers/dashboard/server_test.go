package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/dashboard"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestRetryAPIRefusesWhatIsNotJSON: a form post (what a page of another site can send
// without asking) is refused; an unknown dead letter is a conflict naming it.
func TestRetryAPIRefusesWhatIsNotJSON(t *testing.T) {
	srv := streamstest.Start(t)
	d, err := dashboard.New(dashboard.Config{Client: srv.Client(), Crawl: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	ui := httptest.NewServer(d.Handler())
	defer ui.Close()
	post := func(ct, body string) (int, map[string]any) {
		res, err := http.Post(ui.URL+"/api/dead/retry", ct, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
	if code, _ := post("application/x-www-form-urlencoded", "ids=1-0"); code != http.StatusUnsupportedMediaType {
		t.Errorf("form post: %d, want 415", code)
	}
	if code, _ := post("application/json", `{"ids": []}`); code != http.StatusBadRequest {
		t.Errorf("no ids: %d, want 400", code)
	}
	code, out := post("application/json", `{"ids": ["1-0"]}`)
	if code != http.StatusConflict || !strings.Contains(out["error"].(string), "no dead letter 1-0") {
		t.Errorf("unknown id: %d %v, want 409 naming it", code, out)
	}
	if _, err := dashboard.New(dashboard.Config{Crawl: "shop"}); err == nil {
		t.Error("a dashboard without a client was accepted")
	}
	// The page and its script are served from the binary.
	for path, want := range map[string]string{"/": "<canvas id=\"chart-rates\"", "/static/app.js": "/api/dead/retry"} {
		res, err := http.Get(ui.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d, want 200 with %q", path, res.StatusCode, want)
		}
	}
}

// TestPageShowsFiguresBeforeItsScriptRuns: the page as served (no script run) holds the
// crawl's latest figures, and counts the consumers alive apart from those registered.
func TestPageShowsFiguresBeforeItsScriptRuns(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k := streams.NewKeys("shop")
	for _, cmd := range [][]any{
		{"HSET", k.Meta, "partitions", 1, "seeded_at", "2026-01-01T00:00:00Z"},
		{"HSET", k.Stats, "pages_fetched", 12345, "items_stored", 678},
		{"XADD", k.Requests, "*", "payload", "x"},
		{"XGROUP", "CREATE", k.Requests, "fetch", "0"}, // one entry unread: not done
		{"XGROUP", "CREATECONSUMER", k.Requests, "fetch", "gone"},
	} {
		if err := rdb.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(cmd, err)
		}
	}
	// "gone" goes idle past AliveIdle below; "live" must still be within it at the first
	// sample (with 250ms, a loaded machine's first sample came later: "0 of 2").
	time.Sleep(1200 * time.Millisecond)
	if err := rdb.Do(ctx, "XGROUP", "CREATECONSUMER", k.Requests, "fetch", "live").Err(); err != nil {
		t.Fatal(err)
	}
	d, err := dashboard.New(dashboard.Config{Client: rdb, Crawl: "shop", AliveIdle: time.Second, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ui := httptest.NewServer(d.Handler())
	defer ui.Close()
	get := func() string {
		res, err := http.Get(ui.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	if page := get(); !strings.Contains(page, `<span id="state" class="badge connecting">connecting</span>`) {
		t.Errorf("page before the first sample:\n%s", page)
	}
	rctx, stop := context.WithCancel(ctx)
	go func() { _ = d.Run(rctx) }() // samples at once, then every hour
	defer stop()
	var page string
	for page = get(); !strings.Contains(page, "badge running") && ctx.Err() == nil; page = get() {
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{
		`<span id="crawl">shop</span>`,
		`<span id="state" class="badge running">running</span>`,
		`id="pages">12,345</div>`,
		`id="items">678</div>`,
		`<tr><td>fetch</td><td>1 of 2</td><td>0</td><td>1</td></tr>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page served without its script lacks %q:\n%s", want, page)
		}
	}
}
