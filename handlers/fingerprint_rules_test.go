package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// fingerprintSite serves a home page linking to four tracking variants of two product
// pages, to /next and to /again; every other path is a page without links.
func fingerprintSite() *hitCounter {
	return counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			page(w, "home", "/p?id=1&utm_source=a", "/p?utm_medium=b&id=1&sessionid=x", "/p?SessionId=y&id=1",
				"/p?id=2&utm_source=z", "/next", "/again")
		default:
			page(w, r.URL.Path)
		}
	}))
}

// fingerprintSpider follows every link; on the home page it also asks for /lang in
// English and in German (Accept-Language), and on /next for /again with dont_filter.
func fingerprintSpider(name, base string, rules spiders.FingerprintRules) *spiders.Spider {
	sp := &spiders.Spider{Name: name, StartURLs: []string{base + "/"}, AllowedDomains: []string{"127.0.0.1"},
		Settings: spiders.Settings{AllowNetworks: append([]string(nil), loopback...), Fingerprint: rules}}
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		for _, link := range res.Links("a[href]") {
			req, err := res.Follow(link, "parse")
			if err != nil {
				return err
			}
			out.Follow(req)
		}
		switch res.Request.URL {
		case base + "/":
			for _, lang := range []string{"en", "de"} {
				out.Follow(&spiders.Request{URL: base + "/lang", Headers: map[string]string{"Accept-Language": lang}})
			}
		case base + "/next":
			out.Follow(&spiders.Request{URL: base + "/again", DontFilter: true})
		}
		return nil
	})
	return sp
}

// TestFingerprintRulesInACrawl: with drop_params utm_* and sessionid, the four tracking
// variants of two pages are fetched as two pages (four without rules); with
// Accept-Language in the key, /lang in two languages is fetched twice (once without);
// a dont_filter request fetches a seen page again in both. Then the crawl is run with
// other rules (one more parameter dropped, which none of the site's URLs has): one
// warning, naming the setting and reset, and the seen set kept (no page fetched again,
// the start URL included); a further run with the same rules does not warn again.
func TestFingerprintRulesInACrawl(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rules := spiders.FingerprintRules{DropParams: []string{"utm_*", "sessionid"}, Headers: []string{"accept-language"}}
	for _, tt := range []struct {
		name  string
		rules spiders.FingerprintRules
		want  map[string]int
	}{
		{"fp-rules", rules, map[string]int{"/": 1, "/p": 2, "/lang": 2, "/next": 1, "/again": 2}},
		{"fp-none", spiders.FingerprintRules{}, map[string]int{"/": 1, "/p": 4, "/lang": 1, "/next": 1, "/again": 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			site := fingerprintSite()
			sp := fingerprintSpider(tt.name, serve(t, site), tt.rules)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			rdb := srv.Client()
			if err := runCrawl(ctx, t, rdb, sp, newMemSink(), nil); err != nil {
				t.Fatal(err)
			}
			for path, n := range tt.want {
				if got := site.count(path); got != n {
					t.Errorf("%s fetched %d times, want %d", path, got, n)
				}
			}
			if tt.name != "fp-rules" {
				return
			}

			// The rules change on the crawl: told once, the seen set kept.
			for run, warnings := range []int{1, 0} {
				// One more parameter dropped: another digest, the same keys for this site's URLs.
				sp.Settings.Fingerprint = spiders.FingerprintRules{DropParams: []string{"utm_*", "sessionid", "ref"},
					Headers: []string{"Accept-Language"}}
				core, logs := observer.New(zapcore.WarnLevel)
				if err := runCrawl(ctx, t, rdb, sp, newMemSink(), func(c *handlers.RunConfig) { c.Logger = zap.New(core) }); err != nil {
					t.Fatal(err)
				}
				got := logs.FilterMessage("the spider's fingerprint rules (settings.fingerprint) changed on a running crawl: " +
					"its seen set keeps the keys of the old rules, so a URL seen before may be fetched once more under its new key; " +
					"to rebuild the seen set under the new rules, start the crawl over (`streamcrawl reset --crawl <name>`, or crawl --fresh)").All()
				if len(got) != warnings {
					t.Fatalf("run %d with changed rules: %d warnings about them, want %d (all: %v)", run+2, len(got), warnings, logs.All())
				}
				if warnings > 0 {
					f := got[0].ContextMap()
					if f["setting"] != "settings.fingerprint" || f["reset"] != "streamcrawl reset --crawl fp-rules" || f["crawl"] != "fp-rules" {
						t.Errorf("warning fields %v", f)
					}
				}
			}
			for path, n := range tt.want {
				if got := site.count(path); got != n {
					t.Errorf("after the runs with changed rules, %s fetched %d times, want still %d", path, got, n)
				}
			}
		})
	}
}

// TestDedupExpireAfterReachesTheCrawl: the spider's revisit.forget_after is stored in the
// crawl's dedup record, which every process then uses.
func TestDedupExpireAfterReachesTheCrawl(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	sp := fingerprintSpider("expiring", "http://127.0.0.1:1", spiders.FingerprintRules{})
	sp.Settings.Revisit.ForgetAfter = 2 * time.Hour
	if _, err := handlers.Seed(context.Background(), rdb, sp, nil); err != nil {
		t.Fatal(err)
	}
	rec, err := rdb.HGet(context.Background(), streams.NewKeys("expiring").Meta, "dedup").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rec, `"expire_after":7200000000000`) {
		t.Errorf("stored dedup record %s, want expire_after 2h", rec)
	}
}
