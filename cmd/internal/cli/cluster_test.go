package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// shops serves n demo shops of pages each on loopback ports, each home page linking to
// all the others, and returns them with their base URLs.
func shops(t *testing.T, n, pages int) ([]*demosite.Site, []string) {
	t.Helper()
	return shopsBehind(t, n, pages, nil)
}

// shopsBehind is shops with every shop behind g (nil: none).
func shopsBehind(t *testing.T, n, pages int, g *gate) ([]*demosite.Site, []string) {
	t.Helper()
	sites := make([]*demosite.Site, n)
	bases := make([]string, n)
	for i := range sites {
		sites[i] = demosite.New(pages)
		var h http.Handler = sites[i]
		if g != nil {
			h = g.wrap(h)
		}
		bases[i] = serveSite(t, h)
	}
	for _, s := range sites {
		if err := s.SetPeers(bases); err != nil {
			t.Fatal(err)
		}
	}
	return sites, bases
}

// partitionedSpider is the demo spider of the first shop, with the settings of the
// end-to-end crawls and the crawl split into partitions.
func partitionedSpider(t *testing.T, site *demosite.Site, name, base string, partitions int) string {
	t.Helper()
	return withSetting(t, spiderYAML(t, site, name, base), fmt.Sprintf("partitions: %d", partitions))
}

// TestMultiProcessCrawlOnRedisCluster crawls 20 shops (about 5,000 pages) on a real
// 3-master Redis Cluster, seeded with one shop's home page, by 2 fetch, 2 parse and 1
// store processes, the crawl split into 6 partitions: every page is fetched once,
// every item stored, and every master holds a share of the crawl.
func TestMultiProcessCrawlOnRedisCluster(t *testing.T) {
	t.Parallel()
	cl := streamstest.StartCluster(t, 3)
	rdb := cl.Client()
	const hosts, pages, partitions = 20, 250, 6
	sites, bases := shops(t, hosts, pages)
	spider := writeFile(t, "multi.yaml", partitionedSpider(t, sites[0], "multi", bases[0], partitions))
	out := filepath.Join(t.TempDir(), "multi.jsonl")

	code, stdout, stderr := runCLI(t, 30*time.Second, nil, "seed", "--redis", cl.URL(), "--spider", spider)
	if code != 0 || !strings.Contains(stdout, "queued 1 of 1 URLs") {
		t.Fatalf("seed: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	var procs []*proc
	for stage, n := range map[string]int{streams.StageFetch: 2, streams.StageParse: 2, streams.StageStore: 1} {
		for i := 1; i <= n; i++ {
			args := []string{stage, "--until-done", "--redis", cl.URL(), "--spider", spider,
				"--consumer", fmt.Sprintf("%s-%d", stage, i), "--log-level", "info"}
			args = append(args, fastRetries...)
			if stage == streams.StageStore {
				args = append(args, "--out", out)
			}
			procs = append(procs, startProc(t, fmt.Sprintf("%s-%d", stage, i), nil, args...))
		}
	}
	took := waitAll(t, crawlTimeout, rdb, "multi", procs...)
	checkExit0(t, procs...)

	total, items := 0, 0
	var want []map[string]string
	for i, s := range sites {
		reachable := s.Reachable(false)
		total += len(reachable)
		checkRequests(t, wantRequests(reachable, s.ReachableKind(false, demosite.ServerError)), s.Requests())
		want = append(want, s.ExpectedItems(bases[i])...)
		items += len(s.Products())
	}
	t.Logf("crawl of %d URLs on %d hosts, %d partitions on 3 masters, by 2 fetch, 2 parse, 1 store processes: %s",
		total, hosts, partitions, took.Round(time.Millisecond))
	if total < 5000 {
		t.Errorf("the shops have %d reachable URLs, want at least 5,000", total)
	}
	checkItems(t, readItems(t, out), want, "product", "url")
	st := checkFinished(t, rdb, "multi")
	if st.ItemsStored != int64(items) {
		t.Errorf("items stored %d, want %d", st.ItemsStored, items)
	}

	// Every master serves some partitions and holds keys and memory of the crawl.
	if len(st.Partitions) != partitions || len(st.Nodes) != 3 {
		t.Fatalf("status has %d partitions and %d masters, want %d and 3", len(st.Partitions), len(st.Nodes), partitions)
	}
	crawlKeys := crawlKeysPerMaster(t, rdb, "multi")
	for _, n := range st.Nodes {
		t.Logf("master %s: %d keys (%d of the crawl), used_memory %.1f MiB, partitions %v",
			n.Addr, n.Keys, crawlKeys[n.Addr], float64(n.UsedMemory)/(1<<20), n.Partitions)
		if len(n.Partitions) == 0 || crawlKeys[n.Addr] == 0 {
			t.Errorf("master %s serves partitions %v and holds %d keys of the crawl; want a share of both",
				n.Addr, n.Partitions, crawlKeys[n.Addr])
		}
	}
	// Items land in the partitions of the shops' hosts, and only there. Which partitions
	// those are depends on the loopback ports the shops got (20 hosts over 6
	// partitions leave one empty about one time in seven), so it is computed, not fixed.
	layout := streams.NewLayout("multi", partitions)
	owner := map[string]bool{}
	for _, b := range bases {
		u, err := url.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		owner[layout.Parts[layout.PartitionOf(u.Host)].Tag] = true
	}
	if len(owner) < 3 {
		t.Errorf("%d hosts fall in %d of %d partitions: hosts are not spread", hosts, len(owner), partitions)
	}
	for _, p := range st.Partitions {
		t.Logf("partition %s: %d requests, %d responses, %d items entries, %d bytes", p.Tag, p.Requests, p.Responses, p.Items, p.Bytes)
		if owner[p.Tag] != (p.Items > 0) {
			t.Errorf("partition %s holds %d items; it holds hosts: %v", p.Tag, p.Items, owner[p.Tag])
		}
	}
}

// crawlKeysPerMaster counts the keys of crawl on each master.
func crawlKeysPerMaster(t *testing.T, cc *redis.ClusterClient, crawl string) map[string]int {
	t.Helper()
	out := map[string]int{}
	ch := make(chan [2]any, 8)
	err := cc.ForEachMaster(context.Background(), func(ctx context.Context, c *redis.Client) error {
		keys, err := c.Keys(ctx, "sc:{"+crawl+"*").Result()
		ch <- [2]any{c.Options().Addr, len(keys)}
		return err
	})
	close(ch)
	if err != nil {
		t.Fatalf("count keys per master: %v", err)
	}
	for r := range ch {
		out[r[0].(string)] = r[1].(int)
	}
	return out
}

// TestPartitionedCrawlOnOneRedis runs a partitioned crawl of 8 shops on one redis-server
// with every stage in one process (`crawl`): 5 partitions × 3 stages of blocking reads
// need the pool the partitions size; the summary and the status add up over partitions.
func TestPartitionedCrawlOnOneRedis(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	sites, bases := shops(t, 8, 150)
	spider := writeFile(t, "parts.yaml", partitionedSpider(t, sites[0], "parts", bases[0], 5))
	out := filepath.Join(t.TempDir(), "items.jsonl")
	p := startProc(t, "crawl", nil, append([]string{"crawl", spider, "--redis", srv.URL(), "--out", out}, fastRetries...)...)
	if code, ok := p.Wait(crawlTimeout); !ok || code != 0 {
		t.Fatalf("crawl: exit %d (exited %v)", code, ok)
	}
	var want []map[string]string
	items := 0
	for i, s := range sites {
		checkRequests(t, wantRequests(s.Reachable(false), s.ReachableKind(false, demosite.ServerError)), s.Requests())
		want = append(want, s.ExpectedItems(bases[i])...)
		items += len(s.Products())
	}
	checkItems(t, readItems(t, out), want, "product", "url")
	if !strings.Contains(p.Stdout(), "crawl parts: done=true") {
		t.Errorf("summary does not say done=true:\n%s", p.Stdout())
	}
	rdb := srv.Client()
	st := checkFinished(t, rdb, "parts")
	if len(st.Partitions) != 5 || st.ItemsStored != int64(items) || len(st.Nodes) != 0 {
		t.Errorf("status: %d partitions, %d items stored, %d cluster nodes; want 5, %d, 0", len(st.Partitions), st.ItemsStored, len(st.Nodes), items)
	}
	// Nothing of the crawl lives outside its partitions and crawl-wide keys.
	keys, err := rdb.Keys(context.Background(), "sc:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "sc:{parts:") && !strings.HasPrefix(k, "sc:{parts}:") {
			t.Errorf("stray key %s", k)
		}
		if strings.HasPrefix(k, "sc:{parts}:") && k != "sc:{parts}:meta" && k != "sc:{parts}:stats" && k != "sc:{parts}:hoststats" &&
			k != "sc:{parts}:dicts" {
			t.Errorf("crawl-wide key %s: only meta, stats, hoststats and dicts belong there", k)
		}
	}
	// reset deletes every partition.
	code, stdout, stderr := runCLI(t, 30*time.Second, nil, "reset", "--redis", srv.URL(), "--crawl", "parts")
	if code != 0 {
		t.Fatalf("reset: exit %d: %s %s", code, stdout, stderr)
	}
	if n, _ := rdb.DBSize(context.Background()).Result(); n != 0 {
		left, _ := rdb.Keys(context.Background(), "*").Result()
		t.Errorf("after reset %d keys are left: %v", n, left)
	}
}
