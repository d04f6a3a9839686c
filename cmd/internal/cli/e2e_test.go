package cli

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/spiders/sitetest"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// fetchAttempts is how often the end-to-end crawls request a URL that answers 500 before
// it becomes a dead letter: once, then the spider's max_retries (see spiderYAML).
const fetchAttempts = 3

// maxDeliveries is the --max-deliveries of the end-to-end crawls (deliveries of a stream
// entry whose handler keeps failing or whose consumer keeps dying).
const maxDeliveries = 3

// crawlTimeout bounds every end-to-end crawl (the race detector makes every process
// several times slower).
var crawlTimeout = map[bool]time.Duration{false: 120 * time.Second, true: 180 * time.Second}[raceEnabled]

// fastRetries are the flags that let the sites' 500 pages reach dead letters quickly.
var fastRetries = []string{"--retry-backoff", "50ms", "--max-deliveries", strconv.Itoa(maxDeliveries)}

// cluster is a crawl of one test site by separate stage processes on a real Redis.
type cluster struct {
	t      *testing.T
	name   string // crawl (spider) name
	base   string // site base URL
	spider string // spider YAML file
	out    string // items file of the store stage
	srv    *streamstest.Server
	rdb    *redis.Client
	starts map[string]int // processes started per consumer name
}

// newCluster serves site, writes its spider and starts a redis-server.
func newCluster(t *testing.T, name string, site testSite) *cluster {
	t.Helper()
	c := &cluster{t: t, name: name, starts: map[string]int{}}
	c.srv = streamstest.Start(t)
	c.rdb = c.srv.Client()
	c.base = serveSite(t, site)
	c.spider = writeFile(t, name+".yaml", spiderYAML(t, site, name, c.base))
	c.out = filepath.Join(t.TempDir(), name+".jsonl")
	return c
}

// spiderYAML returns the site's spider with max_retries set so that a URL answering 500
// is requested exactly fetchAttempts times, and robots.txt explicitly not obeyed: the
// crawl reaches site.Reachable(false).
func spiderYAML(t testing.TB, site testSite, name, base string) string {
	t.Helper()
	return spiderYAMLRobots(t, site, name, base, false)
}

// spiderYAMLRobots is spiderYAML with obey_robots set to obey.
func spiderYAMLRobots(t testing.TB, site testSite, name, base string, obey bool) string {
	t.Helper()
	return withSetting(t, site.SpiderYAML(name, base), fmt.Sprintf("max_retries: %d\n  obey_robots: %v", fetchAttempts-1, obey))
}

// withSetting returns spider YAML y with setting (indented under settings: after its
// first line) added at the top of its settings block.
func withSetting(t testing.TB, y, setting string) string {
	t.Helper()
	out := strings.Replace(y, "\nsettings:\n", "\nsettings:\n  "+setting+"\n", 1)
	if out == y {
		t.Fatalf("spider has no settings block:\n%s", y)
	}
	return out
}

// addSetting adds a setting (YAML, indented under settings: after its first line) to the
// crawl's spider file, before the processes start.
func (c *cluster) addSetting(setting string) {
	c.t.Helper()
	y, err := os.ReadFile(c.spider)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(c.spider, []byte(withSetting(c.t, string(y), setting)), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// seed runs `streamcrawl seed` and checks it queued the start URL.
func (c *cluster) seed() {
	c.t.Helper()
	code, stdout, stderr := runCLI(c.t, 30*time.Second, nil, "seed", "--redis", c.srv.URL(), "--spider", c.spider)
	if code != 0 || !strings.Contains(stdout, "queued 1 of 1 URLs for crawl "+c.name) {
		c.t.Fatalf("seed: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
}

// stage starts one stage process with --until-done, consumer name consumer, extra env
// and extra flags.
func (c *cluster) stage(stage, consumer string, env []string, extra ...string) *proc {
	args := []string{stage, "--until-done", "--redis", c.srv.URL(), "--spider", c.spider,
		"--consumer", consumer, "--log-level", "info"}
	args = append(args, fastRetries...)
	if stage == streams.StageStore {
		args = append(args, "--out", c.out)
	}
	c.starts[consumer]++
	name := consumer
	if n := c.starts[consumer]; n > 1 {
		name = fmt.Sprintf("%s(start %d)", consumer, n)
	}
	return startProc(c.t, name, env, append(args, extra...)...)
}

// start starts fetchers, parsers and storers processes of each stage.
func (c *cluster) start(fetchers, parsers, storers int) []*proc {
	var procs []*proc
	for stage, n := range map[string]int{streams.StageFetch: fetchers, streams.StageParse: parsers, streams.StageStore: storers} {
		for i := 1; i <= n; i++ {
			procs = append(procs, c.stage(stage, fmt.Sprintf("%s-%d", stage, i), nil))
		}
	}
	return procs
}

// checkExit0 asserts that every process exited 0.
func checkExit0(t *testing.T, procs ...*proc) {
	t.Helper()
	for _, p := range procs {
		if !p.Exited() {
			t.Errorf("%s: still running, want exit 0", p.name)
		} else if p.code != 0 {
			t.Errorf("%s: exit %d, want 0", p.name, p.code)
		}
	}
}

// wantRequests returns how often a correct crawl requests each reachable URL: once,
// fetchAttempts times for those that answer 500.
func wantRequests(reachable, serverErrors []string) map[string]int {
	want := setOf(reachable)
	for _, u := range serverErrors {
		want[u] = fetchAttempts
	}
	return want
}

// checkRequests compares the site's request counts with want.
func checkRequests(t *testing.T, want, got map[string]int) {
	t.Helper()
	if d := diffCounts(want, got, 40); d != "" {
		total := 0
		for _, n := range got {
			total += n
		}
		t.Errorf("site requests (%d distinct, %d in all; want %d distinct) (-want +got):\n%s", len(got), total, len(want), d)
	}
}

// itemStats are a crawl's item counters and the length of its items stream.
type itemStats struct {
	Entries   int64 // items stream length
	Scraped   int64 // items_scraped: items the parse stage queued
	Dropped   int64 // items_duplicate_dropped: items the parse stage dropped by key
	Stored    int64 // items_stored: items the sink wrote
	Duplicate int64 // items_duplicate: items the sink already had
}

func readItemStats(t testing.TB, rdb redis.UniversalClient, crawl string) itemStats {
	t.Helper()
	return itemStats{
		Entries:   xlen(t, rdb, streams.NewKeys(crawl).Items),
		Scraped:   statInt(t, rdb, crawl, "items_scraped"),
		Dropped:   statInt(t, rdb, crawl, "items_duplicate_dropped"),
		Stored:    statInt(t, rdb, crawl, "items_stored"),
		Duplicate: statInt(t, rdb, crawl, "items_duplicate"),
	}
}

// checkCleanItemStats checks the item counters of a crawl without crashes (every
// process exits by itself, so its counters are flushed). The parse stage drops an item
// whose key was queued before; twin pages (a product page and its tracking-parameter
// variant) parsed at the same moment by two processes may both queue it (the dedup is
// two pipelined round trips, not a script): the sink then skips the twin.
func checkCleanItemStats(t *testing.T, got itemStats, items, itemPages int) {
	t.Helper()
	n := int64(items)
	twins := got.Entries - n
	if got.Scraped != got.Entries || got.Scraped+got.Dropped != int64(itemPages) || got.Stored != n ||
		got.Duplicate != twins || twins < 0 || twins > n/20 {
		t.Errorf("item stats %+v; want entries = scraped, scraped+dropped = %d item pages, stored = %d items, "+
			"duplicates = twins = entries - items, at most 5%% of the items", got, itemPages, n)
	}
	t.Logf("twin items queued by the parse stage and skipped by the sink: %d", twins)
}

// countItemPages returns how many of the reachable HTML URLs are pages of an item:
// their path, without the query, is one of itemPaths.
func countItemPages(reachableHTML, itemPaths []string) int {
	paths := setOf(itemPaths)
	n := 0
	for _, u := range reachableHTML {
		p, _, _ := strings.Cut(u, "?")
		n += paths[p]
	}
	return n
}

// demoItemPages returns the reachable product pages, tracking-parameter variants
// included: each yields the page's item.
func demoItemPages(site *demosite.Site) int {
	var paths []string
	for _, p := range site.Products() {
		paths = append(paths, p.URL)
	}
	return countItemPages(site.ReachableKind(false, demosite.HTML), paths)
}

// testSite is demosite.Site or sitetest.Site.
type testSite interface {
	http.Handler
	SpiderYAML(name, base string) string
}

func TestMultiProcessCrawlDemoSite(t *testing.T) {
	t.Parallel()
	pages := 2000
	if raceEnabled {
		pages = 1000 // five race-instrumented processes
	}
	site := demosite.New(pages)
	c := newCluster(t, "shop", site)
	c.seed()
	procs := c.start(2, 2, 1)
	took := waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	checkExit0(t, procs...)
	t.Logf("crawl of %d URLs by 2 fetch, 2 parse, 1 store processes: %s", len(site.Reachable(false)), took.Round(time.Millisecond))

	checkRequests(t, wantRequests(site.Reachable(false), site.ReachableKind(false, demosite.ServerError)), site.Requests())
	checkItems(t, readItems(t, c.out), site.ExpectedItems(c.base), "product", "url")
	checkFinished(t, c.rdb, c.name)
	if d := diffCounts(prefixed("stage=fetch ", setOf(site.ReachableKind(false, demosite.ServerError))),
		deadLetterPaths(t, c.rdb, c.name, c.base), 20); d != "" {
		t.Errorf("dead letters (-want +got):\n%s", d)
	}
	// Without a crash nothing is redelivered: the tracking-parameter variants of product
	// pages are the only duplicates, dropped by the parse stage.
	checkCleanItemStats(t, readItemStats(t, c.rdb, c.name), len(site.Products()), demoItemPages(site))
}

// TestMultiProcessCrawlObeysRobotsTxt crawls the demo shop with obey_robots: two
// fetchers share one fetch of robots.txt through Redis and skip what it disallows.
func TestMultiProcessCrawlObeysRobotsTxt(t *testing.T) {
	t.Parallel()
	site := demosite.New(500)
	c := newCluster(t, "shop", site)
	c.spider = writeFile(t, "shop-robots.yaml", spiderYAMLRobots(t, site, c.name, c.base, true))
	c.seed()
	procs := c.start(2, 1, 1)
	waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	checkExit0(t, procs...)

	want := wantRequests(site.Reachable(true), site.ReachableKind(true, demosite.ServerError))
	want["/robots.txt"] = 1
	checkRequests(t, want, site.Requests())
	checkItems(t, readItems(t, c.out), site.ExpectedItems(c.base), "product", "url")
	checkFinished(t, c.rdb, c.name)
	if d := diffCounts(prefixed("stage=fetch ", setOf(site.ReachableKind(true, demosite.ServerError))),
		deadLetterPaths(t, c.rdb, c.name, c.base), 20); d != "" {
		t.Errorf("dead letters (-want +got):\n%s", d)
	}
}

// summaryRE matches the summary line of `crawl` about items.
var summaryRE = regexp.MustCompile(`items scraped\s+(\d+), stored (\d+) \((\d+) duplicates skipped\)`)

func TestEmbeddedCrawlDemoSite(t *testing.T) {
	t.Parallel()
	pages := 2000
	if raceEnabled {
		pages = 600 // one race-instrumented process runs every stage and the embedded Redis
	}
	site := demosite.New(pages)
	base := serveSite(t, site)
	spider := writeFile(t, "shop.yaml", spiderYAML(t, site, "shop", base))
	out := filepath.Join(t.TempDir(), "items.jsonl")
	p := startProc(t, "crawl", nil, append([]string{"crawl", spider, "--out", out}, fastRetries...)...)
	code, ok := p.Wait(crawlTimeout)
	if !ok {
		t.Fatalf("crawl still running after %s", crawlTimeout)
	}
	if code != 0 {
		t.Fatalf("crawl: exit %d, want 0", code)
	}
	if !strings.Contains(p.Stderr(), "using embedded Redis") {
		t.Errorf("crawl without --redis and REDIS_URL did not say it uses the embedded Redis")
	}
	checkRequests(t, wantRequests(site.Reachable(false), site.ReachableKind(false, demosite.ServerError)), site.Requests())
	checkItems(t, readItems(t, out), site.ExpectedItems(base), "product", "url")

	stdout := p.Stdout()
	if !strings.Contains(stdout, "crawl shop: done=true") {
		t.Errorf("summary does not say done=true:\n%s", stdout)
	}
	m := summaryRE.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no items line in the summary:\n%s", stdout)
	}
	scraped, _ := strconv.Atoi(m[1])
	stored, _ := strconv.Atoi(m[2])
	dup, _ := strconv.Atoi(m[3])
	// A twin item (product page and tracking variant parsed at the same moment) may be
	// scraped twice; the sink skips it.
	if n := len(site.Products()); scraped != n+dup || stored != n || dup > n/20 {
		t.Errorf("summary: items scraped %d, stored %d, %d duplicates skipped; want %d + skipped, %d, at most %d skipped:\n%s",
			scraped, stored, dup, n, n, n/20, stdout)
	}
	if want := fmt.Sprintf("dead letters    %d\n", len(site.ReachableKind(false, demosite.ServerError))); !strings.Contains(stdout, want) {
		t.Errorf("summary lacks %q:\n%s", want, stdout)
	}
}

func TestMultiProcessCrawl20kSiteTest(t *testing.T) {
	t.Parallel()
	pages := 20000
	if raceEnabled {
		pages = 3000 // the race detector makes every process 5-10x slower
	}
	site := sitetest.New(pages)
	c := newCluster(t, "news", site)
	reachable := site.Reachable(false)
	c.seed()
	start := time.Now()
	procs := c.start(2, 2, 1)
	waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	took := time.Since(start)
	checkExit0(t, procs...)
	fetched := statInt(t, c.rdb, c.name, "pages_fetched")
	t.Logf("sitetest.New(%d): %d reachable URLs, %d pages fetched in %s by 2 fetch, 2 parse, 1 store processes: %.0f pages/s (race=%v)",
		pages, len(reachable), fetched, took.Round(time.Millisecond), float64(fetched)/took.Seconds(), raceEnabled)

	checkRequests(t, wantRequests(reachable, site.ReachableKind(false, sitetest.ServerError)), site.Requests())
	checkItems(t, readItems(t, c.out), site.ExpectedItems(c.base), "article", "url")
	checkFinished(t, c.rdb, c.name)
	if d := diffCounts(prefixed("stage=fetch ", setOf(site.ReachableKind(false, sitetest.ServerError))),
		deadLetterPaths(t, c.rdb, c.name, c.base), 20); d != "" {
		t.Errorf("dead letters (-want +got):\n%s", d)
	}
	var paths []string
	for _, a := range site.Articles() {
		paths = append(paths, a.URL)
	}
	itemPages := countItemPages(site.ReachableKind(false, sitetest.HTML), paths)
	checkCleanItemStats(t, readItemStats(t, c.rdb, c.name), len(site.Articles()), itemPages)
}
