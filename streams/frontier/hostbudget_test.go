package frontier_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// budgetCand is request i of host.
func budgetCand(host string, i int) frontier.Candidate {
	return frontier.Candidate{Fingerprint: []byte(fmt.Sprintf("fp-%s-%d", host, i)), URL: fmt.Sprintf("http://%s/%d", host, i), Host: host}
}

// summedCount returns a counter of the partitions' counters summed.
func summedCount(t *testing.T, rdb redis.UniversalClient, l streams.Layout, field string) int64 {
	t.Helper()
	var n int64
	for _, k := range l.Parts {
		v, err := rdb.HGet(context.Background(), k.Counts, field).Int64()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		n += v
	}
	return n
}

// emitAll emits cands from 4 pages at once, 5 candidates a page, and sums the outcomes.
func emitAll(t *testing.T, f *frontier.Frontier, cands []frontier.Candidate) frontier.Emitted {
	t.Helper()
	var mu sync.Mutex
	var sum frontier.Emitted
	var wg sync.WaitGroup
	for i := 0; i < len(cands); i += 5 {
		page := cands[i:min(i+5, len(cands))]
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := f.Emit(context.Background(), 0, page, nil)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			sum.Requests += e.Requests
			sum.DuplicateRequests += e.DuplicateRequests
			sum.OverBudget += e.OverBudget
			mu.Unlock()
		}()
	}
	wg.Wait()
	return sum
}

// A host over pages_per_host gets no more requests queued, whichever worker's emit
// offers them (pages emitting at once, one partition or several); the other host
// queues all its own, the drops are counted, and the top hosts show the use.
func TestPagesPerHostQueuesExactlyTheBudget(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	for _, parts := range []int{1, 4} {
		t.Run(fmt.Sprint(parts, " partitions"), func(t *testing.T) {
			rdb := srv.Client()
			l := streams.NewLayout(fmt.Sprint("budget-pages-", parts), parts)
			f, err := frontier.New(frontier.Config{Client: rdb, Layout: l, SeenCache: -1, Budget: frontier.HostBudget{Pages: 10}})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close(context.Background())
			var cands []frontier.Candidate
			for i := range 25 {
				cands = append(cands, budgetCand("trap.test", i))
				if i < 5 {
					cands = append(cands, budgetCand("other.test", i))
				}
			}
			cands = append(cands, budgetCand("trap.test", 3)) // a duplicate is a duplicate, not a drop
			e := emitAll(t, f, cands)
			if e.Requests != 15 || e.OverBudget != 15 || e.DuplicateRequests != 1 {
				t.Fatalf("emitted %+v, want 15 queued (10 trap + 5 other), 15 over budget, 1 duplicate", e)
			}
			if n := summedCount(t, rdb, l, "waiting"); n != 15 {
				t.Fatalf("%d requests waiting, want 15", n)
			}
			if n := summedCount(t, rdb, l, "dropped_budget"); n != 15 {
				t.Fatalf("dropped_budget %d, want 15", n)
			}
			k := l.ForHost("trap.test")
			if q, err := frontier.QueuedOf(context.Background(), rdb, k, "trap.test"); err != nil || len(q) != 10 {
				t.Fatalf("trap.test has %d waiting (%v), want 10", len(q), err)
			}
			if used := rdb.HGet(context.Background(), k.Budget, "trap.test").Val(); used != "10" {
				t.Fatalf("trap.test used %q of its budget, want 10", used)
			}
			if s := rdb.ZScore(context.Background(), k.BudgetTop, "trap.test").Val(); s != 10 {
				t.Fatalf("trap.test scores %v in the top hosts, want 10", s)
			}
		})
	}
}

// A budget per domain counts the hosts of one domain together, also when they fall in
// different partitions (the counters are then crawl-wide, each emit reserving its share
// first and giving back what it did not queue).
func TestDomainBudgetSpansSubdomains(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	for _, parts := range []int{1, 8} {
		t.Run(fmt.Sprint(parts, " partitions"), func(t *testing.T) {
			rdb := srv.Client()
			ctx := context.Background()
			l := streams.NewLayout(fmt.Sprint("budget-domain-", parts), parts)
			f, err := frontier.New(frontier.Config{Client: rdb, Layout: l, SeenCache: -1,
				Budget: frontier.HostBudget{Pages: 20, Key: spiders.BudgetDomain}})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close(context.Background())
			subs := []string{"a.trap.test", "b.trap.test", "c.trap.test"}
			if parts > 1 && l.PartitionOf(subs[0]) == l.PartitionOf(subs[1]) && l.PartitionOf(subs[1]) == l.PartitionOf(subs[2]) {
				t.Fatal("the subdomains share a partition: pick others")
			}
			var cands []frontier.Candidate
			for i := range 12 {
				for _, h := range subs {
					cands = append(cands, budgetCand(h, i))
				}
				cands = append(cands, budgetCand("other.test", i))
			}
			e := emitAll(t, f, cands)
			if e.Requests != 20+12 || e.OverBudget != 36-20 {
				t.Fatalf("emitted %+v, want 32 queued (20 of trap.test's hosts + 12 other), 16 over budget", e)
			}
			waiting := 0
			for _, h := range subs {
				q, err := frontier.QueuedOf(ctx, rdb, l.ForHost(h), h)
				if err != nil {
					t.Fatal(err)
				}
				waiting += len(q)
			}
			if waiting != 20 {
				t.Fatalf("trap.test's hosts have %d waiting, want 20", waiting)
			}
			budgets := l.ForHost("a.trap.test")
			if parts > 1 {
				budgets = l.Global
			}
			if used := rdb.HGet(ctx, budgets.Budget, "trap.test").Val(); used != "20" {
				t.Fatalf("trap.test used %q of its budget, want 20 (reservations given back)", used)
			}
		})
	}
}

// Once a host's fetches passed bytes_per_host, its waiting requests are dropped and
// counted and its new ones refused; another host keeps its own.
func TestBytesPerHostDropsTheWaitingAndRefusesNew(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	l := streams.NewLayout("budget-bytes", 2)
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: l, SeenCache: -1, Budget: frontier.HostBudget{Bytes: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	var cands []frontier.Candidate
	for i := range 10 {
		cands = append(cands, budgetCand("big.test", i), budgetCand("small.test", i))
	}
	if e, err := f.Emit(ctx, 0, cands, nil); err != nil || e.Requests != 20 {
		t.Fatalf("emitted %+v (%v), want 20 queued", e, err)
	}
	if n, err := f.SpendBytes(ctx, "big.test", 600); err != nil || n != 0 {
		t.Fatalf("600 of 1000 bytes dropped %d (%v), want 0", n, err)
	}
	if n, err := f.SpendBytes(ctx, "small.test", 999); err != nil || n != 0 {
		t.Fatalf("999 of 1000 bytes dropped %d (%v), want 0", n, err)
	}
	if n, err := f.SpendBytes(ctx, "big.test", 600); err != nil || n != 10 {
		t.Fatalf("1200 of 1000 bytes dropped %d (%v), want the 10 waiting", n, err)
	}
	if q, _ := frontier.QueuedOf(ctx, rdb, l.ForHost("big.test"), "big.test"); len(q) != 0 {
		t.Fatalf("big.test has %d waiting, want 0", len(q))
	}
	if q, _ := frontier.QueuedOf(ctx, rdb, l.ForHost("small.test"), "small.test"); len(q) != 10 {
		t.Fatalf("small.test has %d waiting, want 10", len(q))
	}
	e, err := f.Emit(ctx, 0, []frontier.Candidate{budgetCand("big.test", 50), budgetCand("small.test", 50)}, nil)
	if err != nil || e.Requests != 1 || e.OverBudget != 1 {
		t.Fatalf("emitted %+v (%v), want small.test's queued and big.test's over budget", e, err)
	}
	if n := summedCount(t, rdb, l, "dropped_budget"); n != 11 {
		t.Fatalf("dropped_budget %d, want 11 (10 waiting + 1 new)", n)
	}
	if n := summedCount(t, rdb, l, "waiting"); n != 11 {
		t.Fatalf("%d waiting, want small.test's 11", n)
	}
	if b := rdb.HGet(ctx, l.ForHost("big.test").Budget, "big.test|b").Val(); b != "1200" {
		t.Fatalf("big.test's bytes %q, want 1200", b)
	}
}

// A crawl without a budget keeps nothing for it.
func TestNoBudgetKeepsNoBudgetKeys(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	l := streams.NewLayout("nobudget", 2)
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: l, SeenCache: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	var cands []frontier.Candidate
	for i := range 30 {
		cands = append(cands, budgetCand(fmt.Sprintf("h%d.test", i%3), i))
	}
	if e, err := f.Emit(ctx, 0, cands, nil); err != nil || e.Requests != 30 {
		t.Fatalf("emitted %+v (%v), want 30 queued", e, err)
	}
	if n, err := f.SpendBytes(ctx, "h0.test", 1<<30); err != nil || n != 0 {
		t.Fatalf("bytes without a budget dropped %d (%v)", n, err)
	}
	keys, err := rdb.Keys(ctx, "*}:budget*").Result()
	if err != nil || len(keys) != 0 {
		t.Fatalf("budget keys %v (%v), want none", keys, err)
	}
	if n := summedCount(t, rdb, l, "dropped_budget"); n != 0 {
		t.Fatalf("dropped_budget %d, want 0", n)
	}
	if n := summedCount(t, rdb, l, "waiting"); n != 30 {
		t.Fatalf("%d waiting, want 30", n)
	}
}

// What a budget keeps per host: two fields of the partition's budget hash (requests
// queued, bytes fetched); the top hosts' ZSET stays at most 2×20 members whatever the
// number of hosts.
func TestBudgetStateBytesPerHost(t *testing.T) {
	t.Parallel()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	l := streams.NewLayout("budget-state", 1)
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: l, SeenCache: -1, Budget: frontier.HostBudget{Pages: 100, Bytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	const hosts = 1000
	cands := make([]frontier.Candidate, hosts)
	for i := range cands {
		cands[i] = budgetCand(fmt.Sprintf("host-%04d.test", i), 0)
	}
	if e, err := f.Emit(ctx, 0, cands, nil); err != nil || e.Requests != hosts {
		t.Fatalf("emitted %+v (%v), want %d queued", e, err, hosts)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < hosts; i += 8 {
				if _, err := f.SpendBytes(ctx, fmt.Sprintf("host-%04d.test", i), 1000); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	k := l.Parts[0]
	if n := rdb.HLen(ctx, k.Budget).Val(); n != 2*hosts {
		t.Fatalf("budget hash has %d fields, want %d (2 per host)", n, 2*hosts)
	}
	if n := rdb.ZCard(ctx, k.BudgetTop).Val(); n > 40 {
		t.Fatalf("top hosts ZSET has %d members, want at most 40", n)
	}
	hash, top := rdb.MemoryUsage(ctx, k.Budget, 0).Val(), rdb.MemoryUsage(ctx, k.BudgetTop, 0).Val() // every element
	per := float64(hash) / hosts
	t.Logf("%d hosts: budget hash %d B (%.1f B per host), top ZSET %d B", hosts, hash, per, top)
	if per > 160 {
		t.Fatalf("%.1f B per host, want at most 160", per)
	}
}
