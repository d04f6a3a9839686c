package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/processors/processorstest"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/newssite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// priceShop serves the pages of a newssite.Site as product pages whose price is 10 plus
// the page's version at the shop's clock, which the test sets. It sends no validators,
// so every revisit is a 200 that the spider parses.
type priceShop struct {
	site  *newssite.Site
	mu    sync.Mutex
	now   time.Time
	pages int // pages served
}

func (s *priceShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, p := range s.site.Pages {
		if p.Path == r.URL.Path {
			s.mu.Lock()
			price := 10 + s.site.Version(p, s.now)
			s.pages++
			s.mu.Unlock()
			fmt.Fprintf(w, `<html><body><h1>%s</h1><span class="price">%d</span></body></html>`, p.Path, price)
			return
		}
	}
	http.NotFound(w, r)
}

func (s *priceShop) set(now time.Time) (served int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now, served = now, s.pages
	s.pages = 0
	return served
}

// A shop revisited hourly whose prices change every hour on some products and never on
// the others: each revisit re-emits the changed products as the next _version with
// _changed [price], and nothing for the unchanged ones (counted items_unchanged);
// PostgreSQL holds one row per product with the last version's price.
func TestChangedPricesAreReEmittedAndUpserted(t *testing.T) {
	t.Parallel()
	const hourly, still = 4, 6
	const products = hourly + still
	rdb := streamstest.Start(t).Client()
	pg := processorstest.StartPostgres(t)
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	shop := &priceShop{site: newssite.New(start, 0, hourly, still), now: start}
	base := serve(t, shop)

	sp := &spiders.Spider{Name: "prices", AllowedDomains: []string{"127.0.0.1"},
		Settings: spiders.Settings{AllowNetworks: append([]string(nil), loopback...), PerHostConcurrency: -1, ObeyRobots: new(bool),
			Revisit: spiders.RevisitSettings{Rules: []spiders.RevisitRule{{Match: `/`, Min: time.Hour, Max: 4 * time.Hour, Start: time.Hour}}}}}
	for _, p := range shop.site.Pages {
		sp.StartURLs = append(sp.StartURLs, base+p.Path)
	}
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		doc, err := res.Doc()
		if err != nil {
			return err
		}
		var price int
		fmt.Sscan(doc.Find(".price").Text(), &price)
		out.Yield(spiders.NewItem("product", map[string]any{"url": res.URL, "name": doc.Find("h1").Text(), "price": price}))
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	layout := streams.NewLayout(sp.Name, 1)
	db := dbPool(t, pg)

	// round crawls what is due at shift past the start (the first round: the start URLs)
	// with the shop's clock at start+clock, into PostgreSQL.
	round := func(shift, clock time.Duration) {
		t.Helper()
		shop.set(start.Add(clock))
		if shift > 0 {
			f, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, SeenCache: -1, RevisitClockShift: shift})
			if err != nil {
				t.Fatal(err)
			}
			err = f.ReleaseRevisits(ctx)
			f.Close(context.Background())
			if err != nil {
				t.Fatal(err)
			}
		}
		sink, err := processors.OpenPostgres(ctx, processors.PostgresConfig{URL: pg.URL()})
		if err != nil {
			t.Fatal(err)
		}
		defer sink.Close(ctx)
		if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
			t.Fatal(err)
		}
		if served := shop.set(start.Add(clock)); served != products {
			t.Fatalf("round at %v: %d pages fetched, want %d", clock, served, products)
		}
	}
	check := func(round int, wantItems, wantUnchanged int64) {
		t.Helper()
		scraped, _ := rdb.HGet(ctx, layout.Global.Stats, "items_scraped").Int64()
		unchanged, _ := rdb.HGet(ctx, layout.Global.Stats, "items_unchanged").Int64() // absent: 0
		if scraped != wantItems || unchanged != wantUnchanged {
			t.Fatalf("round %d: items_scraped %d, items_unchanged %d; want %d, %d", round, scraped, unchanged, wantItems, wantUnchanged)
		}
		if n := rdb.XLen(ctx, layout.Parts[0].Items).Val(); n != wantItems {
			t.Fatalf("round %d: items stream holds %d, want %d", round, n, wantItems)
		}
		if n := queryCount(t, db, "SELECT count(*) FROM items"); n != products {
			t.Fatalf("round %d: %d rows, want %d (one per product)", round, n, products)
		}
		v := int64(round)
		if n := queryCount(t, db, "SELECT count(*) FROM items WHERE url LIKE '%/hourly/%' AND version = $1 AND (fields->>'price')::int = $2", v, 10+v-1); n != hourly {
			t.Fatalf("round %d: %d hourly products at version %d, price %d; want %d", round, n, v, 10+v-1, hourly)
		}
		if n := queryCount(t, db, "SELECT count(*) FROM items WHERE url LIKE '%/still/%' AND version = 1 AND (fields->>'price')::int = 10"); n != still {
			t.Fatalf("round %d: %d unchanged products at version 1, want %d", round, n, still)
		}
		// The user's data only: every revisit carries the crawler's _revisit state in its
		// request's meta, and no row's meta holds it (nor any key of the crawler's own).
		if n := queryCount(t, db, `SELECT count(*) FROM items WHERE meta IS NOT NULL AND (meta ? '_revisit' OR EXISTS
			(SELECT 1 FROM jsonb_object_keys(meta) AS k WHERE left(k, 1) = '_'))`); n != 0 {
			t.Fatalf("round %d: %d rows whose meta holds the crawler's own keys, want none", round, n)
		}
		// _changed is stored where versions are: [price] on each re-emit, [] on version 1.
		if v > 1 {
			if n := queryCount(t, db, "SELECT count(*) FROM items WHERE url LIKE '%/hourly/%' AND changed = '{price}'"); n != hourly {
				t.Fatalf("round %d: %d re-emitted products with changed {price}, want %d", round, n, hourly)
			}
		}
		if n := queryCount(t, db, "SELECT count(*) FROM items WHERE version = 1 AND changed = '{}'"); n != products-hourly*min(int(v)-1, 1) {
			t.Fatalf("round %d: %d products at version 1 with changed {}, want %d", round, n, products-hourly*min(int(v)-1, 1))
		}
	}

	round(0, 0)
	check(1, products, 0)
	round(61*time.Minute, time.Hour) // every page is due (start interval 1h): prices of the hourly pages moved
	check(2, products+hourly, still)
	round(3*time.Hour, 2*time.Hour) // changed pages come back after 1h, unchanged after 2h
	check(3, products+2*hourly, 2*still)

	// The last versions on the items stream say what changed.
	msgs := rdb.XRevRangeN(ctx, layout.Parts[0].Items, "+", "-", hourly).Val()
	for _, m := range msgs {
		payload, _ := m.Values["payload"].(string)
		it, err := spiders.UnmarshalItem([]byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		if it.Version != 3 || strings.Join(it.Changed, ",") != "price" {
			t.Fatalf("last version %s: _version %d, _changed %v; want 3, [price]", it.Key(), it.Version, it.Changed)
		}
		if it.Meta != nil {
			t.Fatalf("last version %s: meta %v on the items stream, want none (the request's _revisit is the crawler's)", it.Key(), it.Meta)
		}
	}
}

// dbPool returns a pool on pg, closed when the test ends.
func dbPool(t *testing.T, pg *processorstest.Postgres) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func queryCount(t *testing.T, db *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Pages parsed at the same time that yield one key: from two pages with the same
// values it is one version (the other counted unchanged); from two pages with other
// values it is versions 1 and 2, whichever page wins the race (the loser is made again
// from the winner's record), none lost.
func TestItemKeysRacingAcrossPages(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	mux := http.NewServeMux()
	for _, p := range []string{"/same/a", "/same/b", "/other/a", "/other/b"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `<html><body><h1>%s</h1></body></html>`, r.URL.Path)
		})
	}
	base := serve(t, mux)
	yes := true
	sp := &spiders.Spider{Name: "racing", AllowedDomains: []string{"127.0.0.1"},
		StartURLs: []string{base + "/same/a", base + "/same/b", base + "/other/a", base + "/other/b"},
		Settings: spiders.Settings{AllowNetworks: append([]string(nil), loopback...), PerHostConcurrency: -1, ObeyRobots: new(bool),
			ItemVersions: &yes}}
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		doc, err := res.Doc()
		if err != nil {
			return err
		}
		path := doc.Find("h1").Text()
		group, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		fields := map[string]any{"url": "http://shop/" + group, "price": 10}
		if group == "other" {
			fields["price"] = path // each page its own value
		}
		out.Yield(spiders.NewItem("product", fields))
		return nil
	})
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	layout := streams.NewLayout(sp.Name, 1)
	versions := map[string][]int{}
	for _, m := range rdb.XRange(ctx, layout.Parts[0].Items, "-", "+").Val() {
		payload, _ := m.Values["payload"].(string)
		it, err := spiders.UnmarshalItem([]byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		versions[it.Fields["url"].(string)] = append(versions[it.Fields["url"].(string)], it.Version)
	}
	got := fmt.Sprint(versions["http://shop/same"], versions["http://shop/other"])
	if got != "[1] [1 2]" {
		t.Fatalf("versions on the items stream: same %v, other %v; want [1], [1 2]", versions["http://shop/same"], versions["http://shop/other"])
	}
	if n, _ := rdb.HGet(ctx, layout.Global.Stats, "items_unchanged").Int(); n != 1 {
		t.Fatalf("items_unchanged %d, want 1", n)
	}
}
