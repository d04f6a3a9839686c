package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/broadsite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestFetcherKilledHoldingHostSlotsLosesNothing: a fetch process is killed with
// kill -9 while it holds slots of hosts that allow one request at a time. The other
// fetcher takes its entries over (XAUTOCLAIM), fetches them and gives their slots back,
// so the hosts go on long before their leases would expire (download_timeout 5m makes
// that 10.5 minutes, longer than the test may take); every page is fetched and no slot
// stays taken.
func TestFetcherKilledHoldingHostSlotsLosesNothing(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	web, err := broadsite.Start(broadsite.Config{Hosts: 6, Pages: 15, Latency: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer web.Close()
	yaml := strings.Replace(web.SpiderYAML(0), "settings:\n", "settings:\n  download_timeout: 5m\n", 1)
	path := writeFile(t, "broad.yaml", yaml)
	sp, _, err := spiders.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handlers.Seed(ctx, rdb, sp, nil); err != nil {
		t.Fatal(err)
	}
	out := writeFile(t, "items.jsonl", "")
	common := []string{"--redis", srv.URL(), "--spider", path, "--until-done", "--min-idle", "3s", "--claim-interval", "200ms"}
	stage := func(stage, name string, extra ...string) *proc {
		return startProc(t, name, nil, append(append([]string{stage, "--consumer", name}, common...), extra...)...)
	}
	victim := stage("fetch", "fetch-1")
	others := []*proc{stage("fetch", "fetch-2"), stage("parse", "parse-1"), stage("store", "store-1", "--out", out)}
	k := streams.NewKeys(sp.Name)
	held := int64(0)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		p, err := rdb.XPending(ctx, k.Requests, streams.StageFetch).Result()
		if err == nil && p.Consumers["fetch-1"] >= 2 {
			held = p.Consumers["fetch-1"]
			break
		}
	}
	if held == 0 {
		t.Fatal("fetch-1 never held two requests")
	}
	victim.Kill()
	leases := rdb.ZCard(ctx, k.Leases).Val()
	for _, p := range others {
		if code, ok := p.Wait(crawlTimeout); !ok || code != 0 {
			t.Fatalf("%s: exit %d (exited: %v)", p.name, code, ok)
		}
	}
	r := web.Report(0, 0)
	if r.Missing != 0 {
		t.Fatalf("%d pages never fetched", r.Missing)
	}
	// A fetcher killed after giving a request's slot back but before acking it leaves
	// the request pending; whoever takes it over finds its slot gone and puts it back in
	// its host's queue instead of fetching it beside the host's next request.
	if r.MaxInFlight > 1 {
		t.Errorf("a host had %d requests in flight, want 1 (taken-over requests without a slot wait for one)", r.MaxInFlight)
	}
	if n := len(readItems(t, out)); n != 6*15 {
		t.Errorf("%d items stored, want %d", n, 6*15)
	}
	if n := rdb.ZCard(ctx, k.Leases).Val(); n != 0 {
		t.Errorf("%d leases left at the end, want 0", n)
	}
	for _, h := range rdb.Keys(ctx, k.HostStates+"*").Val() {
		if f := rdb.HGet(ctx, h, "f").Val(); f != "" && f != "0" {
			t.Errorf("host state %s has %s in flight at the end: a slot was never given back", h, f)
		}
	}
	t.Logf("fetch-1 held %d entries when killed (%d leases); pages fetched twice: %d", held, leases, r.Duplicates)
}
