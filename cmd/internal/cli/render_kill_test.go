package cli

import (
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser/browsertest"
	"github.com/streamcrawl/streamcrawl/spiders/jssite"
	"github.com/streamcrawl/streamcrawl/streams"
)

// renderSite is the JavaScript shop as the cluster harness wants a site: its spider
// renders every page, with one browser of two tabs per fetch process.
type renderSite struct {
	*jssite.Site
	products atomic.Int64 // product pages served
}

func (s *renderSite) SpiderYAML(name, base string) string {
	return s.Site.SpiderYAML(name, base, "true")
}

func (s *renderSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/p/") {
		s.products.Add(1)
	}
	s.Site.ServeHTTP(w, r)
}

// TestRenderedCrawlSurvivesKills crawls the JavaScript shop with rendering in two fetch
// processes; once a few product pages were served, a browser of fetch-1 and the whole
// fetch-2 process are killed with SIGKILL. fetch-1 starts a new browser, a new fetch-3
// takes fetch-2's entries over, and the items are the site's truth: nothing lost, no
// item twice.
func TestRenderedCrawlSurvivesKills(t *testing.T) {
	t.Parallel()
	browsertest.Chromium(t)
	site := &renderSite{Site: jssite.New(12)}
	c := newCluster(t, "jskill", site)
	c.seed()
	browserFlags := []string{"--browser-tabs", "2", "--min-idle", "2s", "--claim-interval", "500ms"}
	f1 := c.stage(streams.StageFetch, "fetch-1", nil, browserFlags...)
	f2 := c.stage(streams.StageFetch, "fetch-2", nil, browserFlags...)
	parse := c.stage(streams.StageParse, "parse-1", nil)
	store := c.stage(streams.StageStore, "store-1", nil)
	deadline := time.Now().Add(crawlTimeout)
	for site.products.Load() < 4 {
		if time.Now().After(deadline) || f1.Exited() {
			t.Fatalf("no product page rendered (%d)", site.products.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	browsers := browsertest.Browsers(f1.cmd.Process.Pid)
	if len(browsers) == 0 {
		t.Fatal("fetch-1 runs no browser")
	}
	if err := syscall.Kill(browsers[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f2.Kill()
	f3 := c.stage(streams.StageFetch, "fetch-3", nil, browserFlags...)
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
