package handlers_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestOneHostWhateverWayItsURLsWriteIt: links to one host written with upper case, a
// trailing dot, its scheme's default port or a port's leading zeros queue in that host's
// one queue, under its host key, so that its politeness holds across them. The host
// went to the frontier as the URL wrote it, and the frontier's normaliser kept the
// trailing dot and the zeros: three hosts, three queues, for one site.
func TestOneHostWhateverWayItsURLsWriteIt(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	sp := &spiders.Spider{Name: "onehost", StartURLs: []string{"http://shop.example/"}}
	var cands []frontier.Candidate
	for _, u := range []string{"http://shop.example/a", "HTTP://Shop.Example.:80/b", "http://SHOP.EXAMPLE./c", "http://shop.example:0080/d"} {
		c, err := handlers.CandidateFor(&spiders.Request{URL: u})
		if err != nil {
			t.Fatal(err)
		}
		cands = append(cands, c)
	}
	f, err := handlers.NewFrontier(ctx, rdb, sp)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e, err := f.Emit(ctx, 0, cands, nil)
	if err != nil || e.Requests != 4 {
		t.Fatalf("emit: %+v, %v; want 4 requests queued", e, err)
	}
	k := streams.NewLayout("onehost", 1).Parts[0]
	if got := hostsNamed(ctx, t, rdb, k); fmt.Sprint(got) != "[shop.example]" {
		t.Errorf("hosts in the frontier %v, want [shop.example]", got)
	}
}

// hostsNamed returns the hosts partition k's scheduling names: in host queue keys, the
// ready and scheduled sets, and the leases.
func hostsNamed(ctx context.Context, t *testing.T, rdb redis.UniversalClient, k streams.Keys) []string {
	t.Helper()
	named := map[string]bool{}
	queues, err := rdb.Keys(ctx, k.HostQueues+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range queues {
		named[strings.TrimPrefix(q, k.HostQueues)] = true
	}
	for _, set := range []string{k.Ready, k.Sched, k.Leases} {
		members, err := rdb.ZRange(ctx, set, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range members {
			host, _, _ := strings.Cut(m, "|")
			named[host] = true
		}
	}
	out := make([]string, 0, len(named))
	for h := range named {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}
