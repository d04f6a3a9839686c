package cli

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/streamcrawl/streamcrawl/processors/processorstest"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// slowSite answers after a delay, so that a crawl is still running when it is stopped.
type slowSite struct {
	*demosite.Site
	delay time.Duration
}

func (s slowSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	time.Sleep(s.delay)
	s.Site.ServeHTTP(w, r)
}

// TestSIGTERMMidCrawlThenRestartLosesNothing: SIGTERM to every worker mid-crawl; each
// exits 0 within its shutdown timeout (plus the at most 2 s a blocking read takes to
// return); restarted, the crawl completes with every page fetched exactly once.
func TestSIGTERMMidCrawlThenRestartLosesNothing(t *testing.T) {
	t.Parallel()
	site := demosite.New(600)
	c := newCluster(t, "sigterm", slowSite{site, 200 * time.Millisecond}) // 600 pages, 32 at a time: ~4 s, well over the 2 s below
	c.seed()
	const shutdown = 5 * time.Second
	extra := []string{"--shutdown-timeout", shutdown.String()}
	var procs []*proc
	for _, s := range []string{"fetch-1", "fetch-2", "parse-1", "parse-2", "store-1"} {
		procs = append(procs, c.stage(s[:len(s)-2], s, nil, extra...))
	}
	time.Sleep(2 * time.Second)
	if p, _ := inspect.ReadProgress(context.Background(), c.rdb, streams.NewLayout(c.name, 1)); p.Done() {
		t.Fatal("the crawl finished before SIGTERM; the site is too fast for this test")
	}
	stopped := time.Now()
	for _, p := range procs {
		if err := p.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range procs {
		code, ok := p.Wait(shutdown + 3*time.Second)
		if !ok {
			t.Fatalf("%s still running %s after SIGTERM", p.name, time.Since(stopped))
		}
		if code != 0 {
			t.Errorf("%s exited %d after SIGTERM, want 0", p.name, code)
		}
	}
	t.Logf("all workers exited %s after SIGTERM", time.Since(stopped).Round(time.Millisecond))
	var again []*proc
	for _, s := range []string{"fetch-1", "fetch-2", "parse-1", "parse-2", "store-1"} {
		again = append(again, c.stage(s[:len(s)-2], s, nil, extra...))
	}
	waitAll(t, crawlTimeout, c.rdb, c.name, again...)
	checkExit0(t, again...)
	checkRequests(t, wantRequests(site.Reachable(false), site.ReachableKind(false, demosite.ServerError)), site.Requests())
	checkItems(t, readItems(t, c.out), site.ExpectedItems(c.base), "product", "url")
	checkFinished(t, c.rdb, c.name)
}

// TestPostgresSinkWithAKilledStoreWorkerHasOneRowPerProduct: the store worker writing to
// PostgreSQL dies (exit 137, no cleanup) right before acking its 50th item, after the
// row is committed; its restart re-reads its pending items and the upsert on the item
// key keeps exactly one row per product page.
func TestPostgresSinkWithAKilledStoreWorkerHasOneRowPerProduct(t *testing.T) {
	t.Parallel()
	pg := processorstest.StartPostgres(t)
	site := demosite.New(400)
	c := newCluster(t, "pgshop", site)
	c.out = pg.URL() + "&table=pgshop_items"
	c.seed()
	procs := []*proc{c.stage("fetch", "fetch-1", nil), c.stage("parse", "parse-1", nil)}
	faulty := c.stage("store", "store-1", []string{faultEnv + "=store:50"})
	if code, ok := faulty.Wait(crawlTimeout); !ok || code != 137 {
		t.Fatalf("store worker: exit %d (exited %v), want the fault hook's 137", code, ok)
	}
	procs = append(procs, c.stage("store", "store-1", nil))
	waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	checkExit0(t, procs...)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows, distinct int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT fields->>'url') FROM pgshop_items`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if want := len(site.Products()); rows != want || distinct != want {
		t.Fatalf("rows %d (distinct urls %d), want exactly one per product page: %d", rows, distinct, want)
	}
	got := map[string]bool{}
	r, err := conn.Query(ctx, `SELECT fields->>'url' FROM pgshop_items`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var u string
		if err := r.Scan(&u); err != nil {
			t.Fatal(err)
		}
		got[u] = true
	}
	for _, it := range site.ExpectedItems(c.base) {
		if !got[it["url"]] {
			t.Errorf("no row for %s", it["url"])
		}
	}
}
