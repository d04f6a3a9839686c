package cli

import (
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser/browsertest"
	"github.com/streamcrawl/streamcrawl/spiders/jssite"
	"github.com/streamcrawl/streamcrawl/streams"
)

// renderSite is the JavaScript shop as the cluster harness wants a site: its spider
// renders every page, with one browser of two tabs per fetch process. Its product pages
// stand behind gate.
type renderSite struct {
	*jssite.Site
	gate    *gate
	handler http.Handler
}

func newRenderSite(products int, gate *gate) *renderSite {
	s := &renderSite{Site: jssite.New(products), gate: gate}
	s.handler = gate.wrap(s.Site)
	return s
}

func (s *renderSite) SpiderYAML(name, base string) string {
	return s.Site.SpiderYAML(name, base, "true")
}

func (s *renderSite) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// productPage matches the requests of the JavaScript shop's product pages.
func productPage(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/p/") }

// TestRenderedCrawlSurvivesKills crawls the JavaScript shop with rendering in two fetch
// processes; once 4 product pages were served (the shop holds the next ones, so the
// kills land mid-crawl at any pace of the workers), a browser of fetch-1 and the whole
// fetch-2 process are killed with SIGKILL. fetch-1 starts a new browser, a new fetch-3
// takes fetch-2's entries over, and the items are the site's truth: nothing lost, no
// item twice.
func TestRenderedCrawlSurvivesKills(t *testing.T) {
	t.Parallel()
	browsertest.Chromium(t)
	const shopProducts, before = 12, 4
	site := newRenderSite(shopProducts, newGate(before, productPage))
	c := newCluster(t, "jskill", site)
	c.seed()
	browserFlags := []string{"--browser-tabs", "2", "--min-idle", "2s", "--claim-interval", "500ms"}
	f1 := c.stage(streams.StageFetch, "fetch-1", nil, browserFlags...)
	f2 := c.stage(streams.StageFetch, "fetch-2", nil, browserFlags...)
	parse := c.stage(streams.StageParse, "parse-1", nil)
	store := c.stage(streams.StageStore, "store-1", nil)
	site.gate.waitHeld(t, crawlTimeout)
	// The kill is of a browser that runs, not of one still starting: on a loaded machine
	// fetch-2 can serve the pages before the gate while fetch-1's launch takes seconds,
	// and a browser killed during its launch is a failed launch (retried), not a death.
	for deadline := time.Now().Add(crawlTimeout); !strings.Contains(f1.Stderr(), "browser started"); {
		if f1.Exited() || time.Now().After(deadline) {
			t.Fatalf("fetch-1 started no browser (exited: %v):\n%s", f1.Exited(), tail(f1.Stderr(), 2000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	browsers := browsertest.Browsers(f1.cmd.Process.Pid)
	if len(browsers) == 0 {
		t.Fatal("fetch-1 runs no browser")
	}
	if err := syscall.Kill(browsers[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f2.Kill()
	stored, err := c.rdb.HGet(t.Context(), streams.NewKeys(c.name).Stats, "items_stored").Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	served, held := site.gate.state()
	items := len(site.ExpectedItems())
	t.Logf("at the kills: %d of %d product pages served, %d held; %d of %d items stored", served, shopProducts, held, stored, items)
	if served >= shopProducts || stored >= int64(items) || f1.Exited() {
		t.Errorf("the kills landed after the crawl's work: %d of %d product pages served, %d of %d items stored, fetch-1 exited: %v",
			served, shopProducts, stored, items, f1.Exited())
	}
	f3 := c.stage(streams.StageFetch, "fetch-3", nil, browserFlags...)
	site.gate.open()
	waitAll(t, crawlTimeout, c.rdb, c.name, f1, f3, parse, store)
	checkExit0(t, f1, f3, parse, store)
	lines := readItems(t, c.out)
	var products, guides []map[string]any
	for _, l := range lines {
		if l["_type"] == "guide" {
			guides = append(guides, l)
		} else {
			products = append(products, l)
		}
	}
	var wantP, wantG []map[string]string
	for _, it := range site.ExpectedItems() {
		if it["slug"] != "" {
			wantG = append(wantG, it)
		} else {
			wantP = append(wantP, it)
		}
	}
	checkItems(t, products, wantP, "product", "sku")
	checkItems(t, guides, wantG, "guide", "slug")
	if !strings.Contains(f1.Stderr(), "browser died") {
		t.Errorf("fetch-1 did not notice its browser died:\n%s", tail(f1.Stderr(), 2000))
	}
}
