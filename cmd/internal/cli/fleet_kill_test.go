package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// killEvery is how often the fleet test kills a fetch,parse worker.
const killEvery = 3 * time.Second

// TestFleetSurvivesKilledWorkers is the fleet's chaos test, through the real binary:
// five YAML crawls submitted with `streamcrawl submit` to two `worker --stages
// fetch,parse` and one `worker --stages store`, and every 3 s one of the fetch,parse
// workers, picked at random, killed with SIGKILL and started again with the same
// --consumer (so it re-reads what it held), until every crawl has ended. Every crawl
// ends done, with every expected item stored (none missing, duplicates at most 1%: a
// page parsed again after a kill emits its items again), and the workers left exit 0
// on SIGTERM.
func TestFleetSurvivesKilledWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := streamstest.Start(t)
	reg := fleet.New(srv.Client())
	dir := t.TempDir()
	names := []string{"k1", "k2", "k3", "k4", "k5"}
	sites, bases := map[string]*demosite.Site{}, map[string]string{}
	for _, n := range names {
		sites[n] = demosite.New(600)
		// A little latency keeps the crawls going for several kills.
		bases[n] = serveSite(t, demosite.WithLatency(sites[n], 40*time.Millisecond))
		path := writeFile(t, n+".yaml", sites[n].SpiderYAML(n, bases[n]))
		if code, _, stderr := runCLI(t, fleetRun, nil, "submit", path, "--redis", srv.URL()); code != 0 {
			t.Fatalf("submit %s: exit %d\n%s", n, code, stderr)
		}
	}

	common := append([]string{"--redis", srv.URL(), "--concurrency", "16"}, fastRetries...)
	fetchParse := func(consumer string, gen int) *proc {
		return startProc(t, fmt.Sprintf("%s.%d", consumer, gen), nil,
			append([]string{"worker", "--stages", "fetch,parse", "--consumer", consumer}, common...)...)
	}
	workers := []*proc{fetchParse("fp1", 0), fetchParse("fp2", 0)}
	store := startProc(t, "store", nil, append([]string{"worker", "--stages", "store", "--consumer", "st",
		"--out", filepath.Join(dir, "{crawl}.jsonl")}, common...)...)

	// Kill and restart until every crawl has ended (or a deadline long enough for a
	// loaded machine: crawlTimeout per crawl would be far too generous, the five run at
	// once).
	allEnded := func() (bool, []string) {
		ended, all := true, []string{}
		for _, n := range names {
			c, err := reg.Get(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			ended = ended && !c.State.Active()
			all = append(all, n+"="+string(c.State))
		}
		return ended, all
	}
	kills, held := 0, int64(0) // held: entries the killed workers held just before their kill
	deadline := time.Now().Add(2 * crawlTimeout)
	for next := time.Now().Add(killEvery); ; {
		if ended, st := allEnded(); ended {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("crawls %v after %s and %d kills", st, 2*crawlTimeout, kills)
		}
		if time.Now().Before(next) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		i := rand.IntN(len(workers))
		w := workers[i]
		if w.Exited() {
			t.Fatalf("worker %s exited by itself (exit %d)", w.name, w.code)
		}
		held += heldBy(ctx, srv.Client(), names, fmt.Sprintf("fp%d", i+1))
		w.Kill()
		if w.code != -1 {
			t.Fatalf("worker %s: exit %d when killed, want -1 (SIGKILL)", w.name, w.code)
		}
		kills++
		workers[i] = fetchParse(fmt.Sprintf("fp%d", i+1), kills)
		next = time.Now().Add(killEvery)
	}
	// At least one kill took work with it, or the test shows nothing.
	if held == 0 {
		t.Fatalf("%d kills, none while the worker held an entry: make the crawls longer", kills)
	}

	missing, dups, lines := 0, 0, 0
	for _, n := range names {
		c, err := reg.Get(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if c.State != fleet.Done || c.LastError != "" {
			t.Errorf("crawl %s: %s, last error %q; want done", n, c.State, c.LastError)
		}
		m, d, l := diffFleetItems(t, n, readItems(t, filepath.Join(dir, n+".jsonl")), sites[n].ExpectedItems(bases[n]))
		missing, dups, lines = missing+m, dups+d, lines+l
	}
	want := 0
	for _, n := range names {
		want += len(sites[n].ExpectedItems(bases[n]))
	}
	t.Logf("%d kills (holding %d entries); %d item lines for %d expected items: %d missing, %d duplicates", kills, held, lines, want, missing, dups)
	if dups*100 > want {
		t.Errorf("%d duplicate items of %d (%.2f%%), want at most 1%%", dups, want, 100*float64(dups)/float64(want))
	}

	for _, w := range append(workers, store) {
		if err := w.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range append(workers, store) {
		if code, ok := w.Wait(time.Minute); !ok || code != 0 {
			t.Errorf("worker %s after SIGTERM: exit %d (exited %v), want 0", w.name, code, ok)
		}
	}
}

// heldBy returns the entries consumer holds in the fetch and parse groups of the
// crawls (a crawl whose run has not created its streams yet holds none).
func heldBy(ctx context.Context, rdb redis.UniversalClient, crawls []string, consumer string) int64 {
	var n int64
	for _, c := range crawls {
		for _, st := range []string{streams.StageFetch, streams.StageParse} {
			if p, err := rdb.XPending(ctx, streams.NewKeys(c).Input(st), st).Result(); err == nil {
				n += p.Consumers[consumer]
			}
		}
	}
	return n
}

// diffFleetItems compares the item lines of crawl with the expected items, each a set
// of fields compared whole: an expected item absent, or a line that is no expected
// item, fails the test. It returns the missing items, the duplicate lines (a line
// equal to an earlier one) and the lines.
func diffFleetItems(t *testing.T, crawl string, lines []map[string]any, want []map[string]string) (missing, dups, n int) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("crawl %s: no items expected", crawl)
	}
	var fields []string
	for f := range want[0] {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	row := func(get func(string) string) string {
		parts := make([]string, len(fields))
		for i, f := range fields {
			parts[i] = f + "=" + get(f)
		}
		return strings.Join(parts, " ")
	}
	got := map[string]int{}
	for _, l := range lines {
		got[row(func(f string) string { return str(l[f]) })]++
	}
	wantSet := map[string]bool{}
	for _, w := range want {
		r := row(func(f string) string { return w[f] })
		wantSet[r] = true
		if got[r] == 0 {
			if missing++; missing <= 5 {
				t.Errorf("crawl %s: item missing: %s", crawl, r)
			}
		}
	}
	extra := 0
	for r, c := range got {
		dups += c - 1
		if !wantSet[r] {
			if extra++; extra <= 5 {
				t.Errorf("crawl %s: unexpected item: %s", crawl, r)
			}
		}
	}
	if missing > 0 || extra > 0 {
		t.Errorf("crawl %s: %d items missing, %d unexpected, of %d expected (%d lines)", crawl, missing, extra, len(want), len(lines))
	}
	return missing, dups, len(lines)
}
