package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// fleetRun is how long a fleet command may take (one process, a few commands; crawls
// waits a second for its rate), wide for a loaded machine.
const fleetRun = 60 * time.Second

// crawlJSON is what a test reads of one crawl of `crawls --json`.
type crawlJSON struct {
	Name         string             `json:"name"`
	State        string             `json:"state"`
	Version      int64              `json:"version"`
	Weight       int                `json:"weight"`
	Runs         int64              `json:"runs"`
	GoSpider     string             `json:"go_spider"`
	Schedule     string             `json:"schedule"`
	Continuous   inspect.Continuous `json:"continuous"`
	PagesPerSec  float64            `json:"pages_per_s"`
	PagesFetched int64              `json:"pages_fetched"`
	Items        int64              `json:"items"`
	Waiting      int64              `json:"waiting"`
	DeadLetters  int64              `json:"dead_letters"`
	LastError    string             `json:"last_error"`
}

// crawlsJSON runs `crawls --json` and returns its crawls by name.
func crawlsJSON(t *testing.T, url string) map[string]crawlJSON {
	t.Helper()
	code, stdout, stderr := runCLI(t, fleetRun, nil, "crawls", "--redis", url, "--json")
	if code != 0 {
		t.Fatalf("crawls --json: exit %d, stderr:\n%s", code, stderr)
	}
	var list []crawlJSON
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatalf("crawls --json is not a JSON array: %v\n%s", err, stdout)
	}
	out := map[string]crawlJSON{}
	for _, c := range list {
		out[c.Name] = c
	}
	return out
}

// states returns "name=state vN" for each crawl, sorted by name as crawls lists them.
func states(crawls map[string]crawlJSON) map[string]int {
	out := map[string]int{}
	for _, c := range crawls {
		out[fmt.Sprintf("%s=%s v%d", c.Name, c.State, c.Version)]++
	}
	return out
}

// wantStates fails the test when `crawls --json` does not show exactly want
// ("name=state vN" each).
func wantStates(t *testing.T, url, step string, want ...string) map[string]crawlJSON {
	t.Helper()
	got := crawlsJSON(t, url)
	if d := diffCounts(setOf(want), states(got), 20); d != "" {
		t.Errorf("after %s, crawls --json (-want +got):\n%s", step, d)
	}
	return got
}

// fleetCLI runs a fleet command that must succeed and print want on stdout.
func fleetCLI(t *testing.T, want string, args ...string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, fleetRun, nil, args...)
	if code != 0 || !strings.Contains(stdout, want) {
		t.Fatalf("streamcrawl %s: exit %d, stdout %q, stderr %q; want exit 0 and %q", strings.Join(args, " "), code, stdout, stderr, want)
	}
}

// fleetRefused runs a fleet command that must fail with exit code and want on stderr.
func fleetRefused(t *testing.T, code int, want string, args ...string) {
	t.Helper()
	got, stdout, stderr := runCLI(t, fleetRun, nil, args...)
	if got != code || !strings.Contains(stderr, want) {
		t.Errorf("streamcrawl %s: exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(args, " "), got, stdout, stderr, code, want)
	}
}

// crawlKeyCount counts with SCAN the keys of crawl (its name in the key, the registry's
// own {fleet} keys left out), and those of the registry that name it.
func crawlKeyCount(t *testing.T, rdb redis.UniversalClient, crawl string) (own, registry int) {
	t.Helper()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, "*"+crawl+"*", 1000).Iterator()
	for iter.Next(ctx) {
		if strings.HasPrefix(iter.Val(), "sc:{fleet}:") {
			registry++
		} else {
			own++
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return own, registry
}

func fleetSpider(t *testing.T, name string) string {
	return writeFile(t, name+".yaml", fmt.Sprintf("name: %s\nstart_urls: [http://127.0.0.1:1/%s]\n", name, name))
}

// TestFleetCommands submits crawls and steers them through every command on a real
// redis-server, reading each step's outcome back with `crawls --json`; then the refusals.
func TestFleetCommands(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	url, rdb := srv.URL(), srv.Client()
	reg := fleet.New(rdb)
	alpha, beta := fleetSpider(t, "alpha"), fleetSpider(t, "beta")

	fleetCLI(t, "no crawls registered", "crawls", "--redis", url)
	if got := crawlsJSON(t, url); len(got) != 0 {
		t.Errorf("crawls --json of an empty registry: %v", got)
	}
	fleetCLI(t, "submitted crawl alpha version 1 (queued)", "submit", alpha, "--redis", url, "--weight", "2", "--continuous", "--idle-window", "90s")
	fleetCLI(t, "submitted crawl beta version 1 (queued)", "submit", "--spider", beta, "--redis", url)
	fleetCLI(t, "submitted crawl prices version 1 (scheduled)", "submit", "--go", "prices", "--redis", url, "--schedule", "@daily")
	got := wantStates(t, url, "submit", "alpha=queued v1", "beta=queued v1", "prices=scheduled v1")
	if a := got["alpha"]; a.Weight != 2 || a.Continuous != (inspect.Continuous{On: true, IdleWindow: 90 * time.Second}) {
		t.Errorf("alpha: weight %d, continuous %+v; want 2 and on with a 90s idle window", a.Weight, a.Continuous)
	}
	if p := got["prices"]; p.GoSpider != "prices" || p.Schedule != "@daily" || p.Weight != 1 || p.Continuous.On {
		t.Errorf("prices: %+v; want the Go spider prices, @daily, weight 1, not continuous", p)
	}

	fleetCLI(t, "crawl alpha: paused, was queued", "pause", "--redis", url, "--crawl", "alpha")
	wantStates(t, url, "pause", "alpha=paused v1", "beta=queued v1", "prices=scheduled v1")
	fleetCLI(t, "crawl alpha: queued, was paused", "resume", "--redis", url, "--crawl", "alpha")
	wantStates(t, url, "resume of a crawl never served", "alpha=queued v1", "beta=queued v1", "prices=scheduled v1")

	// A worker starts alpha (what the fleet's worker does with a queued crawl).
	if _, err := reg.Transition(context.Background(), "alpha", []fleet.State{fleet.Queued}, fleet.Running, ""); err != nil {
		t.Fatal(err)
	}
	fleetRefused(t, 1, "cannot resume crawl alpha: it is running (resume takes a crawl that is paused)", "resume", "--redis", url, "--crawl", "alpha")
	fleetRefused(t, 1, "crawl alpha is running: pass --yes to stop it and delete it with its keys", "delete", "--redis", url, "--crawl", "alpha")
	fleetCLI(t, "crawl alpha: paused, was running", "pause", "--redis", url, "--crawl", "alpha")
	fleetCLI(t, "crawl alpha: running, was paused", "resume", "--redis", url, "--crawl", "alpha")
	fleetCLI(t, "submitted crawl alpha version 2 (running)", "submit", alpha, "--redis", url)
	got = wantStates(t, url, "a resubmit of a running crawl", "alpha=running v2", "beta=queued v1", "prices=scheduled v1")
	if a := got["alpha"]; a.Runs != 1 || a.Weight != 1 || a.Continuous.On {
		t.Errorf("alpha resubmitted without flags: runs %d, weight %d, continuous %+v; want 1 run (a resume is not a run), weight 1, not continuous", a.Runs, a.Weight, a.Continuous)
	}
	fleetCLI(t, "crawl prices: cancelled, was scheduled", "cancel", "--redis", url, "--crawl", "prices")
	fleetRefused(t, 1, "cannot pause crawl prices: it is cancelled", "pause", "--redis", url, "--crawl", "prices")
	fleetRefused(t, 1, "cannot cancel crawl prices: it is cancelled", "cancel", "--redis", url, "--crawl", "prices")
	wantStates(t, url, "cancel", "alpha=running v2", "beta=queued v1", "prices=cancelled v1")

	for _, verb := range []string{"pause", "resume", "cancel", "delete"} {
		fleetRefused(t, 1, "no crawl named nosuch; `streamcrawl crawls` lists them", verb, "--redis", url, "--crawl", "nosuch")
	}
	bad := writeFile(t, "bad.yaml", "name: bad\nstart_urls: [http://127.0.0.1:1/]\nsettings:\n  concurency: 3\n")
	fleetRefused(t, 2, bad+`:4: settings: unknown key "concurency"`, "submit", bad, "--redis", url)
	fleetRefused(t, 1, "give a YAML spider file or --go NAME, not both", "submit", alpha, "--go", "alpha", "--redis", url)
	fleetRefused(t, 1, "invalid spider name", "submit", "--go", "no/such", "--redis", url)
	fleetRefused(t, 1, "--schedule: schedule", "submit", beta, "--redis", url, "--schedule", "every day")
	fleetRefused(t, 1, "--weight 0: want 1 or more", "submit", beta, "--redis", url, "--weight", "0")
	wantStates(t, url, "refused submits", "alpha=running v2", "beta=queued v1", "prices=cancelled v1")
	if own, registry := crawlKeyCount(t, rdb, "bad"); own+registry != 0 {
		t.Errorf("a refused submit left %d keys naming its crawl", own+registry)
	}
}

// TestFleetDeleteRemovesEveryKeyOfTheCrawl seeds two crawls, deletes one and counts
// their keys with SCAN: the deleted crawl's are all gone, the other's all there. A
// delete waits for the crawl's consumers: with a stage still serving it, it gives up
// after --timeout and leaves the crawl deleting; once the stage stopped, it deletes.
func TestFleetDeleteRemovesEveryKeyOfTheCrawl(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	url, rdb := srv.URL(), srv.Client()
	alpha, beta := fleetSpider(t, "alpha"), fleetSpider(t, "beta")
	for _, sp := range []string{alpha, beta} {
		fleetCLI(t, "version 1 (queued)", "submit", sp, "--redis", url)
		fleetCLI(t, "queued 1 of 1 URLs", "seed", sp, "--redis", url)
	}
	alphaKeys, _ := crawlKeyCount(t, rdb, "alpha")
	betaKeys, _ := crawlKeyCount(t, rdb, "beta")
	if alphaKeys == 0 || betaKeys == 0 {
		t.Fatalf("after seed: alpha has %d keys, beta %d; want some each", alphaKeys, betaKeys)
	}
	if c := crawlsJSON(t, url)["beta"]; c.Waiting != 1 {
		t.Errorf("beta seeded with one URL: waiting %d, want 1", c.Waiting)
	}

	fleetRefused(t, 1, "crawl beta is queued: pass --yes", "delete", "--redis", url, "--crawl", "beta")
	if n, _ := crawlKeyCount(t, rdb, "beta"); n != betaKeys {
		t.Errorf("a refused delete: beta has %d keys, had %d", n, betaKeys)
	}
	fleetCLI(t, fmt.Sprintf("deleted crawl beta (was queued, version 1): %d keys removed", betaKeys), "delete", "--redis", url, "--crawl", "beta", "--yes")
	if own, registry := crawlKeyCount(t, rdb, "beta"); own+registry != 0 {
		t.Errorf("after delete: %d keys of beta and %d of the registry naming it are left", own, registry)
	}
	if n, _ := crawlKeyCount(t, rdb, "alpha"); n != alphaKeys {
		t.Errorf("deleting beta changed alpha's keys: %d, were %d", n, alphaKeys)
	}
	wantStates(t, url, "delete of beta", "alpha=queued v1")

	// A fetch service of alpha (the one-spider kind) is a consumer of its groups.
	fetch := startProc(t, "fetch-alpha", nil, "fetch", "--redis", url, "--spider", alpha)
	l := fleetLayout(t, rdb, "alpha")
	waitUntil(t, 60*time.Second, "consumer of alpha alive", func() bool {
		alive, err := inspect.Alive(context.Background(), rdb, l)
		return err == nil && len(alive) > 0
	})
	fleetRefused(t, 1, "crawl alpha still has consumers alive after 2s", "delete", "--redis", url, "--crawl", "alpha", "--yes", "--timeout", "2s")
	wantStates(t, url, "a delete that timed out", "alpha=deleting v1")
	if n, _ := crawlKeyCount(t, rdb, "alpha"); n == 0 {
		t.Errorf("a delete that timed out removed alpha's keys")
	}
	fleetRefused(t, 1, "crawl alpha is being deleted", "submit", alpha, "--redis", url)
	if err := fetch.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, ok := fetch.Wait(60 * time.Second); !ok || code != 0 {
		t.Fatalf("fetch after SIGTERM: exited %v, code %d; want exit 0", ok, code)
	}
	fleetCLI(t, "deleted crawl alpha (was deleting, version 1)", "delete", "--redis", url, "--crawl", "alpha")
	if own, registry := crawlKeyCount(t, rdb, "alpha"); own+registry != 0 {
		t.Errorf("after delete: %d keys of alpha and %d of the registry naming it are left", own, registry)
	}
	fleetCLI(t, "no crawls registered", "crawls", "--redis", url)
}

// fleetLayout reads the layout of a crawl that has keys.
func fleetLayout(t *testing.T, rdb redis.UniversalClient, crawl string) streams.Layout {
	t.Helper()
	l, err := streams.ReadLayout(context.Background(), rdb, crawl)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// waitUntil polls ok every 50 ms until it holds, failing the test after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s", what, timeout)
		}
	}
}

// TestFleetCrawlsShowsACrawlsFigures runs a crawl of a registered spider (the one-process
// `crawl`, writing the keys a fleet's workers write) and reads it with crawls: a
// positive pages/s while it runs, and once it is done the same figures as status.
func TestFleetCrawlsShowsACrawlsFigures(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	url := srv.URL()
	site := demosite.New(400)
	base := serveSite(t, slowSite{site, 100 * time.Millisecond}) // at least 10 s at 4 fetches at once
	y := strings.Replace(spiderYAML(t, site, "delta", base), "concurrency: 32\n  per_host_concurrency: 32", "concurrency: 4\n  per_host_concurrency: 4", 1)
	if !strings.Contains(y, "concurrency: 4\n") {
		t.Fatalf("spider has no concurrency to lower:\n%s", y)
	}
	spider := writeFile(t, "delta.yaml", y)
	fleetCLI(t, "submitted crawl delta version 1 (queued)", "submit", spider, "--redis", url)
	crawl := startProc(t, "crawl-delta", nil, append([]string{"crawl", spider, "--redis", url, "--out", filepath.Join(t.TempDir(), "delta.jsonl")}, fastRetries...)...)
	sawRate := false
	for !sawRate && !crawl.Exited() {
		c := crawlsJSON(t, url)["delta"]
		sawRate = c.PagesPerSec > 0 && c.PagesFetched > 0
	}
	if !sawRate {
		t.Errorf("crawls never showed delta with a positive pages/s while its crawl ran")
	}
	if code, ok := crawl.Wait(crawlTimeout); !ok || code != 0 {
		t.Fatalf("crawl: exited %v, code %d", ok, code)
	}
	code, stdout, stderr := runCLI(t, fleetRun, nil, "status", "--redis", url, "--crawl", "delta", "--json")
	if code != 0 {
		t.Fatalf("status: exit %d, stderr:\n%s", code, stderr)
	}
	var st inspect.Status
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, stdout)
	}
	c := crawlsJSON(t, url)["delta"]
	got := map[string]int64{"pages": c.PagesFetched, "items": c.Items, "dead": c.DeadLetters, "waiting": c.Waiting, "pages/s": int64(c.PagesPerSec * 1000)}
	want := map[string]int64{"pages": st.Stats["pages_fetched"], "items": st.ItemsStored, "dead": st.DeadLetters, "waiting": 0, "pages/s": 0}
	if d := diffInts(want, got); d != "" {
		t.Errorf("crawls --json of a done crawl against status (-want +got):\n%s", d)
	}
	if st.Stats["pages_fetched"] < int64(len(site.Products())) || st.ItemsStored != int64(len(site.Products())) {
		t.Errorf("status: %d pages fetched, %d items; want every product's page and item (%d)", st.Stats["pages_fetched"], st.ItemsStored, len(site.Products()))
	}
	code, stdout, stderr = runCLI(t, fleetRun, nil, "crawls", "--redis", url)
	row := fmt.Sprintf(`(?m)^delta +queued +1 +1 +0\.0 +%d +%d +0 +%d +-$`, c.PagesFetched, c.Items, c.DeadLetters)
	if code != 0 || !regexp.MustCompile(row).MatchString(stdout) {
		t.Errorf("crawls: exit %d, stdout:\n%s\nstderr %q; want a row matching %s", code, stdout, stderr, row)
	}
}
