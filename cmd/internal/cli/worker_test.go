package cli

import (
	"context"
	"os"
	"path/filepath"
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

// TestWorkerFleet runs a fleet of real worker processes on a real redis-server: two
// `worker --stages fetch,parse` and one `worker --stages store`. Three crawls submitted
// before they start and one submitted while they run all end done with their items
// exact; the late one is picked up within seconds. A crawl still running when
// the workers get SIGTERM leaves them exiting 0 with no entry pending for them.
func TestWorkerFleet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	reg := fleet.New(rdb)
	dir := t.TempDir()
	names := []string{"alpha", "beta", "gamma", "late"}
	sites, bases := map[string]*demosite.Site{}, map[string]string{}
	for _, n := range names {
		sites[n] = demosite.New(300)
		bases[n] = serveSite(t, sites[n])
	}
	submit := func(name, yaml string) {
		t.Helper()
		if _, err := reg.Submit(ctx, fleet.Submission{Name: name, Spider: []byte(yaml)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names[:3] {
		submit(n, sites[n].SpiderYAML(n, bases[n]))
	}
	common := append([]string{"--redis", srv.URL(), "--concurrency", "16"}, fastRetries...)
	workers := []*proc{
		startProc(t, "fp1", nil, append([]string{"worker", "--stages", "fetch,parse", "--consumer", "fp1"}, common...)...),
		startProc(t, "fp2", nil, append([]string{"worker", "--stages", "fetch,parse", "--consumer", "fp2"}, common...)...),
		startProc(t, "store", nil, append([]string{"worker", "--stages", "store", "--consumer", "st",
			"--out", filepath.Join(dir, "{crawl}.jsonl")}, common...)...),
	}
	waitCrawl(t, reg, "alpha", time.Minute, fleet.Running, fleet.Done)
	submit("late", sites["late"].SpiderYAML("late", bases["late"]))
	// Picked up within seconds (the workers poll the registry twice a second; the margin
	// is for a loaded machine).
	waitCrawl(t, reg, "late", 30*time.Second, fleet.Running, fleet.Done)
	for _, n := range names {
		c := waitCrawl(t, reg, n, 4*time.Minute, fleet.Done)
		if c.LastError != "" || c.Runs != 1 {
			t.Errorf("crawl %s: done after %d runs, last error %q; want 1 run, no error", n, c.Runs, c.LastError)
		}
		checkItems(t, readItems(t, filepath.Join(dir, n+".jsonl")), sites[n].ExpectedItems(bases[n]), "product", "url")
	}

	// A slow crawl is mid-flight when the workers are told to stop.
	slow := demosite.New(2000)
	slowBase := serveSite(t, demosite.WithLatency(slow, 200*time.Millisecond))
	submit("slow", slow.SpiderYAML("slow", slowBase))
	waitCrawl(t, reg, "slow", time.Minute, fleet.Running)
	deadline := time.Now().Add(time.Minute)
	for readCount(t, filepath.Join(dir, "slow.jsonl")) < 20 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	for _, w := range workers {
		if err := w.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range workers {
		if code, ok := w.Wait(time.Minute); !ok || code != 0 {
			t.Errorf("worker %s after SIGTERM: exit %d (exited %v), want 0", w.name, code, ok)
		}
	}
	if c, _ := reg.Get(ctx, "slow"); c.State != fleet.Running {
		t.Errorf("slow crawl after the workers stopped: %s, want running (it was not done)", c.State)
	}
	checkNothingHeld(t, rdb, "slow", "fp1", "fp2", "st")
}

// waitCrawl waits until crawl name is in one of states, failing the test after timeout.
func waitCrawl(t *testing.T, reg *fleet.Registry, name string, timeout time.Duration, states ...fleet.State) fleet.Crawl {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c, err := reg.Get(context.Background(), name)
		for _, s := range states {
			if err == nil && c.State == s {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("crawl %s: %+v (%v) after %s, want %v", name, c, err, timeout, states)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readCount counts the lines of a file (0 when it does not exist yet).
func readCount(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// checkNothingHeld fails the test when a group of the crawl's streams has an entry
// pending, or any of consumers is still in one.
func checkNothingHeld(t *testing.T, rdb redis.UniversalClient, crawl string, consumers ...string) {
	t.Helper()
	ctx := context.Background()
	l, err := streams.ReadLayout(ctx, rdb, crawl)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range l.Parts {
		for _, stage := range []string{streams.StageFetch, streams.StageParse, streams.StageStore} {
			// Every worker has stopped: any entry pending is one they held.
			if p, err := rdb.XPending(ctx, k.Input(stage), stage).Result(); err != nil {
				t.Errorf("pending of %s: %v", k.Input(stage), err)
			} else if p.Count != 0 {
				t.Errorf("%s group %s: %d entries pending after every worker stopped: %v", k.Input(stage), stage, p.Count, p.Consumers)
			}
			cs, err := rdb.XInfoConsumers(ctx, k.Input(stage), stage).Result()
			if err != nil {
				t.Errorf("consumers of %s: %v", k.Input(stage), err)
				continue
			}
			for _, c := range cs {
				for _, mine := range consumers {
					if c.Name == mine {
						t.Errorf("%s group %s: consumer %s still there with %d pending after SIGTERM", k.Input(stage), stage, c.Name, c.Pending)
					}
				}
			}
		}
	}
}
