package metrics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// commands returns how many commands the server processed, this question not included.
func commands(t *testing.T, rdb redis.UniversalClient) float64 {
	t.Helper()
	info, err := inspect.InfoNumbers(context.Background(), rdb, "stats")
	if err != nil {
		t.Fatal(err)
	}
	return info["total_commands_processed"]
}

// cost returns the Redis commands that f made (the INFO that counts them excluded).
func cost(t *testing.T, rdb redis.UniversalClient, f func()) float64 {
	t.Helper()
	before := commands(t, rdb)
	f()
	return commands(t, rdb) - before - 1
}

// seedHosts seeds perHost URLs on each of hosts hosts of the crawl sp, from from.
func seedHosts(t *testing.T, rdb redis.UniversalClient, sp *spiders.Spider, from, hosts, perHost int) {
	t.Helper()
	var urls []string
	for h := from; h < from+hosts; h++ {
		for p := 0; p < perHost; p++ {
			urls = append(urls, fmt.Sprintf("http://h%d.test/p/%d", h, p))
		}
	}
	if _, err := handlers.Seed(context.Background(), rdb, sp, urls); err != nil {
		t.Fatal(err)
	}
}

// TestAScrapeCostsTheSameWhateverTheCrawlsSize: one exporter scrape of a crawl of 2,000
// URLs over 100 hosts and of the same crawl grown to 22,000 URLs over 1,100 hosts costs
// the same number of Redis commands, at most 50 (it read every dedup bucket and host
// before: 262,220 commands at 1,000,000 URLs).
func TestAScrapeCostsTheSameWhateverTheCrawlsSize(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	sp, _, err := spiders.Parse("size.yaml", []byte("name: size\nstart_urls: [\"http://h0.test/\"]\nsettings:\n  capacity: 100000\n"))
	if err != nil {
		t.Fatal(err)
	}
	scrape := func() float64 {
		reg := prometheus.NewRegistry()
		reg.MustRegister(metrics.NewCrawlCollector(context.Background(), metrics.NewSampler(rdb, 0), metrics.Crawls("size"), nil))
		return cost(t, rdb, func() {
			if _, err := reg.Gather(); err != nil {
				t.Fatal(err)
			}
		})
	}
	seedHosts(t, rdb, sp, 0, 100, 20)
	scrape() // loads the scripts a scrape runs
	small := scrape()
	seedHosts(t, rdb, sp, 100, 1000, 20)
	big := scrape()
	if small > 50 || big != small {
		t.Fatalf("a scrape cost %v commands at 2,000 URLs and %v at 22,000: want the same, at most 50", small, big)
	}
}

// TestTheSamplerSharesOneReadPerInterval: the dashboard and /metrics of one process ask
// through one Sampler; within its interval a second ask costs Redis nothing, after it
// a read is made again.
func TestTheSamplerSharesOneReadPerInterval(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	sp, _, err := spiders.Parse("shared.yaml", []byte("name: shared\nstart_urls: [\"http://h0.test/\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	seedHosts(t, rdb, sp, 0, 10, 10)
	const every = 300 * time.Millisecond
	s := metrics.NewSampler(rdb, every)
	var first metrics.Sample
	if n := cost(t, rdb, func() {
		if first, err = s.Read(ctx, "shared"); err != nil {
			t.Fatal(err)
		}
	}); n == 0 {
		t.Fatal("the first read made no Redis command")
	}
	if first.Status == nil || first.Status.Seen != 100 {
		t.Fatalf("first read %+v, want 100 URLs seen", first.Status)
	}
	var again metrics.Sample
	if n := cost(t, rdb, func() {
		if again, err = s.Read(ctx, "shared"); err != nil {
			t.Fatal(err)
		}
		if _, _, err = s.Memory(ctx); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a read and a memory read within the interval cost %v commands, want 0", n)
	}
	if !again.At.Equal(first.At) {
		t.Fatalf("the second read is taken at %v, want the first's (%v)", again.At, first.At)
	}
	time.Sleep(every + 50*time.Millisecond)
	if n := cost(t, rdb, func() {
		if again, err = s.Read(ctx, "shared"); err != nil {
			t.Fatal(err)
		}
	}); n == 0 || !again.At.After(first.At) {
		t.Fatalf("a read after the interval cost %v commands, taken at %v: want a new read", n, again.At)
	}
}
