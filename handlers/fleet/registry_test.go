package fleet_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

const shopYAML = "name: shop\nstart_urls: [http://127.0.0.1:1/]\n"

// TestRegistryKeepsCrawlsAndTheirStates submits, resubmits, pauses and resumes crawls
// on a real redis-server and reads back what each step left.
func TestRegistryKeepsCrawlsAndTheirStates(t *testing.T) {
	ctx := context.Background()
	reg := fleet.New(streamstest.Start(t).Client())

	c, err := reg.Submit(ctx, fleet.Submission{Name: "shop", Spider: []byte(shopYAML), Weight: 3})
	if err != nil {
		t.Fatal(err)
	}
	if c.State != fleet.Queued || c.Version != 1 || c.Weight != 3 {
		t.Errorf("submitted: %+v; want queued, version 1, weight 3", c)
	}
	gen, _ := reg.Gen(ctx)
	if _, err := reg.Submit(ctx, fleet.Submission{Name: "news", GoSpider: "news", Schedule: "*/5 * * * *"}); err != nil {
		t.Fatal(err)
	}
	if g, _ := reg.Gen(ctx); g <= gen {
		t.Errorf("generation %d after a submit, was %d: workers would not see it", g, gen)
	}
	if prev, err := reg.Transition(ctx, "shop", []fleet.State{fleet.Queued}, fleet.Running, ""); err != nil || prev != fleet.Queued {
		t.Fatalf("queued -> running: was %q, %v", prev, err)
	}
	// A resubmit of a running crawl is its next version, still running.
	if c, err = reg.Submit(ctx, fleet.Submission{Name: "shop", Spider: []byte(shopYAML + "# v2\n")}); err != nil {
		t.Fatal(err)
	}
	if c.State != fleet.Running || c.Version != 2 || c.Runs != 1 {
		t.Errorf("resubmitted: %+v; want running, version 2, 1 run", c)
	}
	if text, v, err := reg.Spider(ctx, "shop"); err != nil || v != 2 || string(text) != shopYAML+"# v2\n" {
		t.Errorf("spider of shop: version %d, %q, %v", v, text, err)
	}
	if _, err := reg.Transition(ctx, "shop", []fleet.State{fleet.Paused}, fleet.Running, ""); !errors.Is(err, fleet.ErrState) {
		t.Errorf("resume of a running crawl: %v, want ErrState", err)
	}
	if _, err := reg.Transition(ctx, "nosuch", nil, fleet.Paused, ""); !errors.Is(err, fleet.ErrUnknownCrawl) {
		t.Errorf("pause of an unknown crawl: %v, want ErrUnknownCrawl", err)
	}
	if _, err := reg.Transition(ctx, "shop", nil, fleet.Failed, "HTTP 404 on every start URL"); err != nil {
		t.Fatal(err)
	}
	list, err := reg.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "news" || list[1].Name != "shop" {
		t.Fatalf("list: %+v", list)
	}
	if n := list[0]; n.State != fleet.Scheduled || n.GoSpider != "news" || n.Schedule != "*/5 * * * *" {
		t.Errorf("news: %+v", n)
	}
	if s := list[1]; s.State != fleet.Failed || s.LastError != "HTTP 404 on every start URL" {
		t.Errorf("shop: %+v", s)
	}
	if err := reg.Remove(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Get(ctx, "shop"); !errors.Is(err, fleet.ErrUnknownCrawl) {
		t.Errorf("a removed crawl: %v", err)
	}
}

// TestSubmitRefusesWhatIsNotACrawl: bad names, both or neither spider kind, bad weights
// and schedules are refused before anything is written.
func TestSubmitRefusesWhatIsNotACrawl(t *testing.T) {
	ctx := context.Background()
	rdb := streamstest.Start(t).Client()
	reg := fleet.New(rdb)
	for _, s := range []fleet.Submission{
		{Name: "bad name", Spider: []byte(shopYAML)},
		{Name: "shop"},
		{Name: "shop", Spider: []byte(shopYAML), GoSpider: "shop"},
		{Name: "shop", Spider: []byte(shopYAML), Weight: -1},
		{Name: "shop", Spider: []byte(shopYAML), Schedule: "every day"},
	} {
		if _, err := reg.Submit(ctx, s); err == nil {
			t.Errorf("submit %+v: no error", s)
		}
	}
	if n := rdb.DBSize(ctx).Val(); n != 0 {
		t.Errorf("%d keys written by refused submits", n)
	}
}

func TestLatestTick(t *testing.T) {
	s, err := fleet.ParseSchedule("*/5 * * * *")
	if err != nil {
		t.Fatal(err)
	}
	at := func(hm string) time.Time { v, _ := time.Parse("15:04:05", hm); return v }
	if got := fleet.LatestTick(s, at("10:01:00"), at("10:17:30")); !got.Equal(at("10:15:00")) {
		t.Errorf("latest tick in (10:01, 10:17:30]: %v", got)
	}
	if got := fleet.LatestTick(s, at("10:15:00"), at("10:19:59")); !got.IsZero() {
		t.Errorf("no tick in (10:15, 10:19:59], got %v", got)
	}
}
