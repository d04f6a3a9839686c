package handlers_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/broadsite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// trapPageSize is the body size of every page of a trap.
const trapPageSize = 400

// trap is a crawler trap: an endless calendar, each day's page linking to the next
// three days, every page trapPageSize bytes. It counts the page requests per path.
type trap struct {
	base string
	mu   sync.Mutex
	hits map[string]int
}

// startTrap serves a trap on its own loopback address (another host than any other).
func startTrap(t *testing.T, addr string) *trap {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := &trap{base: "http://" + ln.Addr().String(), hits: map[string]int{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		tr.mu.Lock()
		tr.hits[r.URL.Path]++
		tr.mu.Unlock()
		day, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/day/"))
		var b strings.Builder
		fmt.Fprintf(&b, "<html><body><h1>day %d</h1>", day)
		for d := day + 1; d <= day+3; d++ {
			fmt.Fprintf(&b, `<a href="/day/%d">next</a>`, d)
		}
		b.WriteString("</body></html>")
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(b.String() + strings.Repeat(" ", trapPageSize-b.Len())))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return tr
}

// pages returns the trap's pages fetched and those fetched more than once.
func (tr *trap) pages() (pages, twice int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, n := range tr.hits {
		pages++
		if n > 1 {
			twice++
		}
	}
	return pages, twice
}

// budgetKeys returns the crawl's budget keys in Redis.
func budgetKeys(t *testing.T, srv *streamstest.Server, crawl string) []string {
	t.Helper()
	keys, err := srv.Client().Keys(context.Background(), "sc:{"+crawl+"*}:budget*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestTrapHostEndsAtItsPageBudgetWhileOthersFinish: a crawler trap (an endless
// calendar) with pages_per_host: 100 is fetched exactly 100 pages, across two fetch
// processes and two partitions, while the crawl's other hosts are fetched whole; the
// refused links are counted and status names the trap first.
func TestTrapHostEndsAtItsPageBudgetWhileOthersFinish(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	web := startWeb(t, broadsite.Config{Hosts: 3, Pages: 30})
	tr := startTrap(t, "127.0.9.1:0")
	sp := politeSpider("trapcrawl", append(web.Bases(), tr.base)...)
	sp.Settings.Concurrency = 8
	sp.Settings.Partitions = 2
	sp.Settings.AllowNetworks = []string{"127.0.0.0/8"}
	sp.Settings.Budget = spiders.Budget{PagesPerHost: 100}
	runCluster(t, srv, sp, 2, newMemSink(), nil)

	if pages, twice := tr.pages(); pages != 100 || twice != 0 {
		t.Fatalf("trap: %d pages fetched (%d twice), want exactly 100 once", pages, twice)
	}
	if r := web.Report(0, 0); r.Pages != 3*30 || r.Missing != 0 {
		t.Fatalf("other hosts: %d pages fetched, %d missing, want all %d", r.Pages, r.Missing, 3*30)
	}
	l, err := streams.ReadLayout(context.Background(), srv.Client(), sp.Name)
	if err != nil {
		t.Fatal(err)
	}
	st, err := inspect.ReadStatus(context.Background(), srv.Client(), l)
	if err != nil {
		t.Fatal(err)
	}
	// Pages 1..100 link to 3 days ahead each: days 101..103 were refused (once each:
	// a refused URL is seen).
	if n := st.Counts["dropped_budget"]; n != 3 {
		t.Errorf("dropped_budget %d, want 3 (days 101 to 103)", n)
	}
	if len(st.Budget) != 4 || st.Budget[0].Key != spiders.BudgetHost(spiders.HostKey(tr.base)) || st.Budget[0].Pages != 100 {
		t.Errorf("budget use %+v, want the trap first with 100 pages, then the 3 other hosts", st.Budget)
	}
}

// TestBytesBudgetStopsAHostAfterItsBytes: bytes_per_host of 10 pages' bodies stops
// the trap at 10 pages (one request at a time to it: the bytes are counted before its
// slot goes back); a crawl without a budget keeps no budget keys in Redis.
func TestBytesBudgetStopsAHostAfterItsBytes(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	web := startWeb(t, broadsite.Config{Hosts: 2, Pages: 10})
	tr := startTrap(t, "127.0.9.2:0")
	sp := politeSpider("bytecrawl", append(web.Bases(), tr.base)...)
	sp.Settings.PerHostConcurrency = 1
	sp.Settings.AllowNetworks = []string{"127.0.0.0/8"}
	sp.Settings.Budget = spiders.Budget{BytesPerHost: 10 * trapPageSize}
	runCluster(t, srv, sp, 2, newMemSink(), nil)
	if pages, _ := tr.pages(); pages != 10 {
		t.Fatalf("trap: %d pages fetched, want 10 (%d bytes of %d-byte pages)", pages, 10*trapPageSize, trapPageSize)
	}
	if r := web.Report(0, 0); r.Pages != 2*10 || r.Missing != 0 {
		t.Fatalf("other hosts: %d pages fetched, %d missing, want all %d", r.Pages, r.Missing, 2*10)
	}
	if len(budgetKeys(t, srv, sp.Name)) == 0 {
		t.Fatal("a crawl with a budget kept no budget keys")
	}

	plain := politeSpider("plaincrawl", web.Bases()...)
	plain.Settings.AllowNetworks = []string{"127.0.0.0/8"}
	runCluster(t, srv, plain, 1, newMemSink(), nil)
	if keys := budgetKeys(t, srv, plain.Name); len(keys) != 0 {
		t.Fatalf("a crawl without a budget keeps %v", keys)
	}
}

// TestBudgetHoldsForOneAddressOnManyPorts: one address serving a trap on 6 ports is one
// host for a budget per: host and one domain for per: domain (the key is the address
// without its port): the 6 traps together get at most the budget, where each port used
// to get all of it; a partitioned crawl counts the ports of the host crawl-wide.
func TestBudgetHoldsForOneAddressOnManyPorts(t *testing.T) {
	t.Parallel()
	const budget, ports = 30, 6
	for i, tt := range []struct {
		per        string
		partitions int
	}{{spiders.BudgetPerHost, 2}, {spiders.BudgetPerDomain, 1}} {
		t.Run(tt.per, func(t *testing.T) {
			t.Parallel()
			srv := streamstest.Start(t)
			var traps []*trap
			var bases []string
			for range ports {
				tr := startTrap(t, fmt.Sprintf("127.0.9.%d:0", 30+i))
				traps, bases = append(traps, tr), append(bases, tr.base)
			}
			sp := politeSpider("portcrawl"+tt.per, bases...)
			sp.Settings.Concurrency = 8
			sp.Settings.Partitions = tt.partitions
			sp.Settings.AllowNetworks = []string{"127.0.0.0/8"}
			sp.Settings.Budget = spiders.Budget{PagesPerHost: budget, Per: tt.per}
			runCluster(t, srv, sp, 2, newMemSink(), nil)
			total, onPorts := 0, 0
			for _, tr := range traps {
				pages, twice := tr.pages()
				if twice != 0 {
					t.Errorf("%s: %d pages fetched twice", tr.base, twice)
				}
				total += pages
				if pages > 0 {
					onPorts++
				}
			}
			// Two queueing steps racing at the limit of crawl-wide counters may end a
			// key a few pages under it, never over.
			if total > budget || total < budget-ports {
				t.Fatalf("%d ports of one address: %d pages fetched in all, want at most %d (and near it)", ports, total, budget)
			}
			if onPorts < 2 {
				t.Errorf("pages came from %d of %d ports: the test did not spread the budget over ports", onPorts, ports)
			}
		})
	}
}
