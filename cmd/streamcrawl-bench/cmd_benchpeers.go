package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// cheerioJS is Crawlee's CheerioCrawler on the demo shop; bench-peers writes it into the
// directory where crawlee is installed (an ES module finds its imports from its own
// directory, not from NODE_PATH).
//
//go:embed crawlee/cheerio.js
var cheerioJS []byte

// peersOptions are bench-peers' settings.
type peersOptions struct {
	Pages, PageSize, PerHost, Rounds int
	Streamcrawl, Colly, Crawlee      string
	RetryBackoff                     time.Duration // streamcrawl's --retry-backoff
	Record                           string        // where to write the run's results as JSON ("": nowhere)
}

// peersRecord is a bench-peers run as --record writes it.
type peersRecord struct {
	Pages        int       `json:"pages"`
	PageSize     int       `json:"page_size"`
	PerHost      int       `json:"per_host"`
	Rounds       int       `json:"rounds"`
	RetryBackoff string    `json:"retry_backoff"`
	Runs         []peerRow `json:"runs"`
}

// peerRow is one crawl of a bench-peers run as recorded.
type peerRow struct {
	Crawler       string  `json:"crawler"`
	Round         int     `json:"round"` // from 1
	Pages         int64   `json:"pages"`
	Items         int64   `json:"items"`
	DistinctSKUs  int     `json:"distinct_skus"`
	WallS         float64 `json:"wall_s"`
	CPUS          float64 `json:"cpu_s"`
	PagesPerS     float64 `json:"pages_per_s"`
	CPUSPer1000   float64 `json:"cpu_s_per_1000_pages"`
	PeakRSSBytes  int64   `json:"peak_rss_bytes"`
	RedisCPUS     float64 `json:"redis_cpu_s"`
	RedisCmds     float64 `json:"redis_commands"`
	LoadAtEnd     string  `json:"load_at_end"`
	RedisIdleOnly bool    `json:"redis_idle_only,omitempty"` // the crawler used no Redis (its figures are the server idling)
}

// row is r as recorded.
func (r peerRun) row() peerRow {
	p := float64(max(r.Pages, 1))
	return peerRow{Crawler: r.Name, Round: r.Round, Pages: r.Pages, Items: r.Items, DistinctSKUs: r.Distinct,
		WallS: r.Wall.Seconds(), CPUS: r.CPU.Seconds(), PagesPerS: p / r.Wall.Seconds(), CPUSPer1000: r.CPU.Seconds() / p * 1000,
		PeakRSSBytes: r.PeakRSS, RedisCPUS: r.RedisCPU, RedisCmds: r.RedisCmds, LoadAtEnd: r.Load, RedisIdleOnly: r.RedisCmds < 100}
}

// peerRun is one crawler's one crawl: what it fetched and stored, and what it cost.
type peerRun struct {
	Name         string
	Round        int // from 1
	Pages, Items int64
	Distinct     int // items with distinct SKUs in its items file
	Wall, CPU    time.Duration
	PeakRSS      int64   // bytes
	RedisCPU     float64 // seconds of the Redis server's CPU during the crawl
	RedisCmds    float64 // commands Redis processed during the crawl
	Load         string  // uptime's load averages when it ended
}

func (a *app) benchPeersCommand() *cobra.Command {
	var o peersOptions
	cmd := &cobra.Command{
		Use:   "bench-peers --colly BIN --crawlee DIR [--pages N] [--page-size BYTES] [--per-host N] [--rounds N] [--retry-backoff D] [--record FILE]",
		Short: "Crawl the demo shop with streamcrawl, Colly and Crawlee's CheerioCrawler in turn and print one table",
		Long: `bench-peers starts the demo shop (pages padded to --page-size) and a throw-away
redis-server, then crawls the shop with each crawler in turn, each in its own process,
--rounds times (streamcrawl, Colly, Crawlee, streamcrawl, ...), on the same site with the
same per-host limit and robots.txt obeyed, and prints one row per crawl: pages fetched,
items stored, pages/s, CPU seconds per 1000 pages, peak RSS (all of the crawler's
process), and the Redis server's CPU µs and commands per page (Redis is flushed before
each crawl).

streamcrawl runs "streamcrawl crawl --redis" (--streamcrawl: the binary; default the
streamcrawl beside this one, else on PATH) with the demo shop's spider. Colly is the
harness in peers/colly, its own Go module: build it with
  (cd cmd/streamcrawl-bench/peers/colly && go build -o /tmp/colly-bench .)
and pass --colly /tmp/colly-bench. Crawlee needs "npm install crawlee@3.18.1" in a
directory passed as --crawlee. A crawler whose flag is empty is left out.

The shop has 3 pages that always answer 500. Colly does not retry them and Crawlee
retries them at once; streamcrawl waits --retry-backoff before its first retry, doubled
for the next two (its own default, 1s, would add about 7 s of waiting for them to the
end of its crawl alone), so the bench passes 100ms unless told otherwise.

--record FILE writes the run's rows as JSON with its conditions (date, Go version,
GOMAXPROCS, load average at start, arguments), for the plots command.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cond := conditionsNow(cmd)
			runs, err := a.benchPeers(cmd.Context(), &o)
			if err != nil || o.Record == "" {
				return err
			}
			rec := &peersRecord{Pages: o.Pages, PageSize: o.PageSize, PerHost: o.PerHost, Rounds: o.Rounds, RetryBackoff: o.RetryBackoff.String()}
			for _, r := range runs {
				rec.Runs = append(rec.Runs, r.row())
			}
			return writeRecord(o.Record, &record{Kind: recordPeers, Conditions: cond, Peers: rec})
		},
	}
	cmd.Flags().IntVar(&o.Pages, "pages", 20000, "pages of the demo shop")
	cmd.Flags().IntVar(&o.PageSize, "page-size", 25000, "bytes per page of the demo shop (0: as they are, 9-20 KB)")
	cmd.Flags().IntVar(&o.PerHost, "per-host", 8, "requests in flight to the shop at most, for every crawler")
	cmd.Flags().IntVar(&o.Rounds, "rounds", 1, "times each crawler crawls the shop, alternately")
	cmd.Flags().DurationVar(&o.RetryBackoff, "retry-backoff", 100*time.Millisecond, "streamcrawl's wait before its first retry of a failed fetch (its own default is 1s)")
	cmd.Flags().StringVar(&o.Streamcrawl, "streamcrawl", "", "the streamcrawl binary (default: beside this one, else on PATH; \"-\" leaves it out)")
	cmd.Flags().StringVar(&o.Colly, "colly", "", "the Colly harness binary built from peers/colly")
	cmd.Flags().StringVar(&o.Crawlee, "crawlee", "", "a directory where crawlee is installed (npm install crawlee@3.18.1)")
	cmd.Flags().StringVar(&o.Record, "record", "", "write the run's results and conditions to this JSON file")
	return cmd
}

// benchPeers runs the crawls and returns them in the order they ran.
func (a *app) benchPeers(ctx context.Context, o *peersOptions) ([]peerRun, error) {
	if o.Streamcrawl == "" {
		o.Streamcrawl = "streamcrawl"
		if exe, err := os.Executable(); err == nil {
			if p := filepath.Join(filepath.Dir(exe), "streamcrawl"); fileExists(p) {
				o.Streamcrawl = p
			}
		}
	}
	site, base, err := startSiteChild(ctx, o.Pages, "--page-size", fmt.Sprint(o.PageSize))
	if err != nil {
		return nil, err
	}
	defer site.stop()
	rc, redisURL, err := startRedisChild(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench-peers: needs redis-server on PATH: %w", err)
	}
	defer rc.stop()
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	dir, err := os.MkdirTemp("", "streamcrawl-bench-peers")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	type crawler struct {
		name string
		argv func() ([]string, error)
	}
	itemsFile := func(name string) string { return filepath.Join(dir, name+".jsonl") }
	var crawlers []crawler
	if o.Streamcrawl != "-" {
		spider := filepath.Join(dir, "peers.yaml")
		yaml := strings.Replace(shopSpider("peers", base, o.Pages, 64, true), "# per_host_concurrency: default",
			fmt.Sprintf("per_host_concurrency: %d", o.PerHost), 1)
		if err := os.WriteFile(spider, []byte(yaml), 0o644); err != nil {
			return nil, err
		}
		crawlers = append(crawlers, crawler{"streamcrawl", func() ([]string, error) {
			return []string{o.Streamcrawl, "crawl", "--redis", redisURL, "--fresh", "--spider", spider,
				"--out", itemsFile("streamcrawl"), "--log-level", "error", "--retry-backoff", o.RetryBackoff.String()}, nil
		}})
	}
	if o.Colly != "" {
		crawlers = append(crawlers, crawler{"colly", func() ([]string, error) {
			return []string{o.Colly, "--url", base, "--per-host", fmt.Sprint(o.PerHost), "--redis", redisURL,
				"--out", itemsFile("colly")}, nil
		}})
	}
	if o.Crawlee != "" {
		script := filepath.Join(o.Crawlee, "streamcrawl-bench-cheerio.mjs")
		if err := os.WriteFile(script, cheerioJS, 0o644); err != nil {
			return nil, err
		}
		defer os.Remove(script)
		crawlers = append(crawlers, crawler{"crawlee-cheerio", func() ([]string, error) {
			return []string{"node", script, "--url", base, "--per-host", fmt.Sprint(o.PerHost),
				"--out", itemsFile("crawlee-cheerio")}, nil
		}})
	}
	fmt.Fprintf(a.Stdout, "bench-peers: demo shop of %d pages of about %d bytes at %s, per-host limit %d, robots.txt obeyed, streamcrawl's retry backoff %s\n",
		o.Pages, o.PageSize, base, o.PerHost, o.RetryBackoff)
	var runs []peerRun
	for r := 0; r < o.Rounds; r++ {
		for _, c := range crawlers {
			argv, err := c.argv()
			if err != nil {
				return nil, err
			}
			run, err := runPeer(ctx, rdb, dir, c.name, argv, itemsFile(c.name))
			if err != nil {
				return nil, err
			}
			run.Round = r + 1
			runs = append(runs, run)
			printPeerRow(a.Stdout, run, len(runs) == 1)
		}
	}
	return runs, nil
}

// runPeer flushes Redis, runs argv and returns its figures; pages and items come from the
// last JSON line of its output ({"pages":N,"items":N}) or, for streamcrawl, its summary.
func runPeer(ctx context.Context, rdb *redis.Client, dir, name string, argv []string, items string) (peerRun, error) {
	run := peerRun{Name: name}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		return run, err
	}
	// Each round writes a new items file: streamcrawl's JSONL sink skips the items a file
	// already holds (it is idempotent across restarts), so a second round appending to
	// the first's file stored none.
	if err := os.Remove(items); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return run, err
	}
	before := redisInfo(ctx, rdb)
	var out bytes.Buffer
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return run, err
	}
	defer logf.Close()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout = io.MultiWriter(&out, logf)
	cmd.Stderr = logf
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return run, fmt.Errorf("bench-peers: %s: %w (log: %s)", name, err, tail(filepath.Join(dir, name+".log")))
	}
	run.Wall = time.Since(start)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		run.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		run.PeakRSS = ru.Maxrss * 1024
	}
	after := redisInfo(ctx, rdb)
	run.RedisCPU = (after["used_cpu_user"] + after["used_cpu_sys"]) - (before["used_cpu_user"] + before["used_cpu_sys"])
	run.RedisCmds = after["total_commands_processed"] - before["total_commands_processed"]
	run.Pages, run.Items = peerCounts(out.String())
	run.Distinct = distinctSKUs(items)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		run.Load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return run, nil
}

// distinctSKUs counts the distinct "sku" values of a JSON-lines items file.
func distinctSKUs(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		var it struct {
			SKU string `json:"sku"`
		}
		if json.Unmarshal(sc.Bytes(), &it) == nil && it.SKU != "" {
			seen[it.SKU] = true
		}
	}
	return len(seen)
}

// peerCounts reads pages and items from a harness's JSON line or streamcrawl's summary
// ("pages fetched   1984 (83/s)", "items scraped   1646, stored 1646 ...").
func peerCounts(out string) (pages, items int64) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var j struct{ Pages, Items int64 }
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &j) == nil {
			pages, items = j.Pages, j.Items
		}
		if rest, ok := strings.CutPrefix(line, "pages fetched"); ok {
			fmt.Sscan(rest, &pages)
		}
		if _, rest, ok := strings.Cut(line, ", stored "); ok && strings.HasPrefix(line, "items scraped") {
			fmt.Sscan(rest, &items)
		}
	}
	return pages, items
}

func printPeerRow(w io.Writer, r peerRun, header bool) {
	if header {
		fmt.Fprintf(w, "| %-15s | %6s | %13s | %7s | %7s | %12s | %8s | %12s | %12s | %-14s |\n| %s |\n",
			"crawler", "pages", "items (SKUs)", "wall s", "pages/s", "CPU-s/1000 p", "peak RSS", "Redis µs/p", "Redis cmd/p", "load 1/5/15",
			strings.Repeat("-", 15)+" | -----: | ------------: | ------: | ------: | -----------: | -------: | -----------: | -----------: | "+strings.Repeat("-", 14))
	}
	p := float64(max(r.Pages, 1))
	us, cmds := fmt.Sprintf("%.0f", r.RedisCPU/p*1e6), fmt.Sprintf("%.1f", r.RedisCmds/p)
	if r.RedisCmds < 100 { // Crawlee keeps its queue in memory: Redis only idled
		us, cmds = "-", "-"
	}
	fmt.Fprintf(w, "| %-15s | %6d | %13s | %7.1f | %7.0f | %12.2f | %5.0f MB | %12s | %12s | %-14s |\n",
		r.Name, r.Pages, fmt.Sprintf("%d (%d)", r.Items, r.Distinct), r.Wall.Seconds(), p/r.Wall.Seconds(), r.CPU.Seconds()/p*1000,
		float64(r.PeakRSS)/1e6, us, cmds, r.Load)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// tail returns the end of the file at path, for an error.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return strings.TrimSpace(string(b))
}
