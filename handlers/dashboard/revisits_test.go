package dashboard_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/dashboard"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestPageShowsRevisitsOfAContinuousCrawl: a continuous crawl with 3 revisits scheduled
// (1 due now, 2 within the hour) and one further out shows them on the page as served
// and in /api/status, with the badge "continuous" instead of "running".
func TestPageShowsRevisitsOfAContinuousCrawl(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	layout := streams.NewLayout("news", 1)
	if err := rdb.HSet(ctx, layout.Parts[0].Meta, "partitions", 1, "seeded_at", "2026-01-01T00:00:00Z").Err(); err != nil {
		t.Fatal(err)
	}
	if err := inspect.SetContinuous(ctx, rdb, layout, inspect.Continuous{On: true}); err != nil {
		t.Fatal(err)
	}
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, SeenCache: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	for i, after := range []time.Duration{0, 20 * time.Minute, 40 * time.Minute, 3 * time.Hour} {
		url := fmt.Sprintf("http://news.test/%d", i)
		fp := sha256.Sum256([]byte(url)) // a chain is keyed by the URL's fingerprint
		chain := frontier.RevisitChain{URL: fp[:], Gen: 1}
		if _, err := f.ScheduleRevisit(ctx, "news.test", 0, 0, []byte(`{"url":"`+url+`"}`), after, chain); err != nil {
			t.Fatal(err)
		}
	}
	d, err := dashboard.New(dashboard.Config{Client: rdb, Crawl: "news", Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ui := httptest.NewServer(d.Handler())
	defer ui.Close()
	get := func(path string) string {
		res, err := http.Get(ui.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	rctx, stop := context.WithCancel(ctx)
	go func() { _ = d.Run(rctx) }() // samples at once, then every hour
	defer stop()
	var page string
	for page = get("/"); strings.Contains(page, "badge connecting") && ctx.Err() == nil; page = get("/") {
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{
		`<span id="state" class="badge continuous">continuous</span>`,
		`id="revisits">4 (1)</div>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	var st struct {
		History []dashboard.Sample `json:"history"`
	}
	if err := json.Unmarshal([]byte(get("/api/status")), &st); err != nil || len(st.History) == 0 {
		t.Fatalf("/api/status: %v, %d samples", err, len(st.History))
	}
	last := st.History[len(st.History)-1]
	if !last.Continuous || last.Revisits != 4 || last.RevisitsDue != 1 || last.RevisitsNextHour != 2 {
		t.Errorf("/api/status sample: continuous %v, revisits %d, due %d, next hour %d; want true, 4, 1, 2",
			last.Continuous, last.Revisits, last.RevisitsDue, last.RevisitsNextHour)
	}
}
