package spiders_test

import (
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

func TestRevisitIntervalHalvesOnChangeDoublesOtherwiseWithinBounds(t *testing.T) {
	r := spiders.RevisitRule{Match: `/news/`, Min: 10 * time.Minute, Max: 4 * time.Hour, Start: time.Hour}
	if err := r.Compile(); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		changed bool
		want    time.Duration
	}{
		{false, time.Hour}, // first fetch: start
		{true, 30 * time.Minute}, {true, 15 * time.Minute}, {true, 10 * time.Minute}, {true, 10 * time.Minute},
		{false, 20 * time.Minute}, {false, 40 * time.Minute}, {false, 80 * time.Minute},
		{false, 160 * time.Minute}, {false, 4 * time.Hour}, {false, 4 * time.Hour},
	}
	var cur time.Duration
	for i, s := range steps {
		cur = r.Next(cur, s.changed)
		if cur != s.want {
			t.Fatalf("step %d (changed %v): interval %v, want %v", i, s.changed, cur, s.want)
		}
	}
	if !r.Matches("https://a.example/news/1") || r.Matches("https://a.example/about") {
		t.Fatal("pattern /news/ matched the wrong URLs")
	}
	rules := []spiders.RevisitRule{r, {Min: time.Hour, Max: 24 * time.Hour}}
	if err := rules[1].Compile(); err != nil {
		t.Fatal(err)
	}
	if got := spiders.RevisitFor(rules, "https://a.example/about"); got == nil || got.Start != time.Hour {
		t.Fatalf("catch-all rule: got %+v, want start = min = 1h", got)
	}
}

func TestRevisitRuleRejectsBadBounds(t *testing.T) {
	for _, r := range []spiders.RevisitRule{
		{Min: time.Second, Max: time.Hour},
		{Min: time.Hour, Max: time.Minute},
		{Match: "(", Min: time.Hour, Max: time.Hour},
	} {
		if err := r.Compile(); err == nil {
			t.Fatalf("%+v compiled, want an error", r)
		}
	}
}

func TestRevisitRulesFromYAML(t *testing.T) {
	sp, _, err := spiders.Parse("news.yaml", []byte(`
name: news
start_urls: ["http://127.0.0.1/"]
settings:
  revisit:
    - match: '/feed'
      min: 10m
      max: 336h
      start: 1h
    - {min: 1h, max: 24h}
`))
	if err != nil {
		t.Fatal(err)
	}
	rules := sp.Settings.Revisit.Rules
	if len(rules) != 2 || rules[0].Max != 336*time.Hour || rules[1].Start != time.Hour {
		t.Fatalf("rules %+v, want 2 with max 336h and a default start of 1h", rules)
	}
	if r := spiders.RevisitFor(rules, "http://127.0.0.1/feed.xml"); r == nil || r.Min != 10*time.Minute {
		t.Fatalf("feed rule %+v, want min 10m", r)
	}
}
