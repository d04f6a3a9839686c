package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/cmd/internal/cli"
	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/spiders/jssite"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// The Crawlee side of bench-render: its script and package.json, written to the
// Crawlee directory (where npm installs them) before each run.
var (
	//go:embed crawlee/main.js
	crawleeMain []byte
	//go:embed crawlee/package.json
	crawleePackage []byte
)

// renderOptions are bench-render's flags.
type renderOptions struct {
	products int
	modes    string
	crawlee  bool
	npmDir   string
	series   bool
	keep     bool
	timeout  time.Duration
	chromium string
	redisURL string
	dir      string
	siteBase string
}

// renderRun is what one crawl of the JavaScript site cost.
type renderRun struct {
	tool, mode       string
	pages, rendered  int64 // pages fetched; of them rendered in a browser
	items            int64
	took             time.Duration
	cpu, redisCPU    float64 // seconds: the crawler's processes and browsers; Redis
	peakPSS, peakRSS int64
	retired, crashes int64
	series           []memSample
	failed           string
}

func (a *app) benchRenderCommand() *cobra.Command {
	var o renderOptions
	cmd := &cobra.Command{
		Use:   "bench-render [--products N] [--modes true,auto] [--crawlee] [--series]",
		Short: "Crawl the JavaScript test site rendering its pages, beside Crawlee, and print pages/s, CPU and browser memory",
		Long: `bench-render serves the JavaScript shop (spiders/jssite) in a child process and crawls it
with streamcrawl's fetch, parse and store processes on a real Redis, one run per mode of
--modes (render: true, auto, false), with the default browser pool (one browser of 4 tabs,
retired after 100 pages). For each run it prints the pages fetched and rendered, the items
stored, pages/s, CPU seconds per 1000 pages of the crawler's processes and their browsers
(Redis apart), and the peak memory of the browser processes (PSS and RSS, from /proc).

--crawlee runs Crawlee's PuppeteerCrawler on the same site in the same run, with the same
rules, concurrency (4 pages at once, one browser) and Debian's chromium: its script and
package.json are in cmd/streamcrawl-bench/crawlee, installed with npm (PUPPETEER_SKIP_DOWNLOAD=1)
into --crawlee-dir the first time. --series prints the browsers' memory every 100 pages
of the first run: flat memory, retirements visible.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			url, dir, done, err := a.benchEnv(ctx, "bench-render", o.keep)
			if err != nil {
				return err
			}
			defer done()
			o.redisURL, o.dir = url, dir
			if o.chromium, err = browser.FindChromium(); err != nil {
				return err
			}
			site, base, err := startJSSiteChild(ctx, o.products)
			if err != nil {
				return err
			}
			defer site.stop()
			o.siteBase = base
			var runs []*renderRun
			for i, mode := range strings.Split(o.modes, ",") {
				r, err := a.renderStreamcrawl(ctx, o, strings.TrimSpace(mode), i == 0 && o.series)
				if err != nil {
					return err
				}
				runs = append(runs, r)
			}
			if o.crawlee {
				r, err := runCrawlee(ctx, o)
				if err != nil {
					return err
				}
				runs = append(runs, r)
			}
			printRender(a.Stdout, o, runs)
			return nil
		},
	}
	a.RedisFlags(cmd, false)
	fl := cmd.Flags()
	fl.IntVar(&o.products, "products", 120, "products of the JavaScript shop (it has three times as many guides, half as many brands)")
	fl.StringVar(&o.modes, "modes", "true", "streamcrawl runs, by render mode: true, auto, false (comma-separated)")
	fl.BoolVar(&o.crawlee, "crawlee", false, "also crawl the site with Crawlee's PuppeteerCrawler (needs node and npm)")
	fl.StringVar(&o.npmDir, "crawlee-dir", filepath.Join(os.TempDir(), "streamcrawl-bench-crawlee"), "where Crawlee is installed")
	fl.BoolVar(&o.series, "series", false, "print the browsers' memory every 100 pages of the first run")
	fl.BoolVar(&o.keep, "keep", false, "keep the work directory (spider, logs, items)")
	fl.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up on a run after this long")
	return cmd
}

// jsSiteCommand serves the JavaScript shop: bench-render's site, in its own process so
// that its CPU is not the crawler's.
func (a *app) jsSiteCommand() *cobra.Command {
	var addr string
	var products int
	cmd := &cobra.Command{
		Use:    "js-site",
		Short:  "Serve the JavaScript test shop",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "listening on http://%s/\n", ln.Addr())
			return cli.Serve(cmd.Context(), ln, jssite.New(products))
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "address to serve on")
	cmd.Flags().IntVar(&products, "products", 120, "products of the shop")
	return cmd
}

// startJSSiteChild runs js-site in a child process and returns its base URL.
func startJSSiteChild(ctx context.Context, products int) (*child, string, error) {
	return startServerChild(ctx, "js site", "js-site", "--products", strconv.Itoa(products))
}

// renderStreamcrawl crawls the site with streamcrawl's stage processes in render mode.
func (a *app) renderStreamcrawl(ctx context.Context, o renderOptions, mode string, series bool) (*renderRun, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	name := "jsbench" + strings.ReplaceAll(mode, "true", "")
	yaml := jssite.New(o.products).SpiderYAML(name, o.siteBase, mode)
	dir := filepath.Join(o.dir, mode) // its own items file: the JSONL sink skips keys a file holds
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w, err := startWorkers(ctx, o.redisURL, dir, name, yaml, 1, "", "warn")
	if err != nil {
		return nil, err
	}
	defer w.c.Close()
	l, err := streams.ReadLayout(ctx, w.c, name)
	if err != nil {
		return nil, err
	}
	stats := l.Global.Stats
	rendered := func() int64 {
		n, _ := w.c.HGet(ctx, stats, "pages_rendered").Int64()
		return n
	}
	var pids []int
	for _, p := range w.procs {
		pids = append(pids, p.Process.Pid)
	}
	var progress func() int64
	if series {
		progress = rendered
	}
	s := newTreeSampler(250*time.Millisecond, progress, pids...)
	failed := w.wait()
	r := &renderRun{tool: "streamcrawl", mode: mode, took: time.Since(w.start), cpu: s.finish()}
	r.redisCPU, _ = w.redisCost(ctx)
	st, err := inspect.ReadStatus(ctx, w.c, l)
	if err != nil {
		return nil, err
	}
	r.pages, r.rendered, r.items = st.Stats["pages_fetched"], st.Stats["pages_rendered"], st.ItemsStored
	r.retired, r.crashes = st.Stats["browser_retired_pages"]+st.Stats["browser_retired_memory"], st.Stats["browser_crashes"]
	r.peakPSS, r.peakRSS, r.series = s.peakPSS, s.peakRSS, s.series
	if len(failed) > 0 || !st.Done {
		r.failed = fmt.Sprintf("done=%v, failed processes: %v (logs in %s)", st.Done, failed, dir)
	}
	return r, nil
}

// installCrawlee installs crawlee (the package.json of cmd/streamcrawl-bench/crawlee,
// with puppeteer-core and no browser download) into dir with npm, unless it is there.
func installCrawlee(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), crawleePackage, 0o644); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "crawlee")); err == nil {
		return nil
	}
	npm := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel", "error")
	npm.Dir, npm.Env = dir, append(os.Environ(), "PUPPETEER_SKIP_DOWNLOAD=1")
	if out, err := npm.CombinedOutput(); err != nil {
		return fmt.Errorf("npm install in %s: %w\n%s", dir, err, out)
	}
	return nil
}

// runCrawlee crawls the site with Crawlee's PuppeteerCrawler (installed first).
func runCrawlee(ctx context.Context, o renderOptions) (*renderRun, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if err := installCrawlee(ctx, o.npmDir); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.npmDir, "main.js"), crawleeMain, 0o644); err != nil {
		return nil, err
	}
	items := filepath.Join(o.dir, "crawlee-items.jsonl")
	node := exec.CommandContext(ctx, "node", "main.js", "--url", o.siteBase, "--chromium", o.chromium, "--browsers", "1",
		"--tabs", strconv.Itoa(browser.DefaultTabs), "--retire-after", strconv.Itoa(browser.DefaultRetireAfter), "--out", items)
	node.Dir = o.npmDir
	var stdout strings.Builder
	node.Stdout = &stdout
	logf, err := os.Create(filepath.Join(o.dir, "crawlee.log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	node.Stderr = logf
	start := time.Now()
	if err := node.Start(); err != nil {
		return nil, err
	}
	s := newTreeSampler(250*time.Millisecond, nil, node.Process.Pid)
	err = node.Wait()
	r := &renderRun{tool: "crawlee", mode: "true", took: time.Since(start), cpu: s.finish(), peakPSS: s.peakPSS, peakRSS: s.peakRSS}
	if err != nil {
		return nil, fmt.Errorf("crawlee: %w (log in %s)", err, logf.Name())
	}
	var sum struct{ Pages, Items, Failed int64 }
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		return nil, fmt.Errorf("crawlee's summary %q: %w", stdout.String(), err)
	}
	r.pages, r.rendered, r.items = sum.Pages, sum.Pages, sum.Items
	if sum.Failed > 0 {
		r.failed = fmt.Sprintf("%d requests failed", sum.Failed)
	}
	return r, nil
}

// printRender prints one row per run and the memory series.
func printRender(w io.Writer, o renderOptions, runs []*renderRun) {
	site := jssite.New(o.products)
	fmt.Fprintf(w, "bench-render: JavaScript shop of %d products, %d guides, %d brands, %d categories (truth: %d items); one browser, %d tabs\n",
		site.Products(), site.Guides(), site.Brands(), site.Categories(), len(site.ExpectedItems()), browser.DefaultTabs)
	fmt.Fprintf(w, "%-12s %-6s %7s %9s %6s %8s %7s %14s %13s %13s %8s\n", "crawler", "render", "pages", "rendered", "items",
		"wall s", "pages/s", "CPU s/1000 p", "browser PSS", "browser RSS", "retired")
	for _, r := range runs {
		cpu := r.cpu
		note := ""
		if r.redisCPU > 0 {
			note = fmt.Sprintf(" (+%.1f Redis)", r.redisCPU/float64(max(r.pages, 1))*1000)
		}
		fmt.Fprintf(w, "%-12s %-6s %7d %9d %6d %8.1f %7.1f %14s %9.0f MiB %9.0f MiB %8d\n", r.tool, r.mode, r.pages, r.rendered, r.items,
			r.took.Seconds(), float64(r.pages)/r.took.Seconds(), fmt.Sprintf("%.1f", cpu/float64(max(r.pages, 1))*1000)+note,
			float64(r.peakPSS)/(1<<20), float64(r.peakRSS)/(1<<20), r.retired)
		if r.failed != "" {
			fmt.Fprintf(w, "  %s %s: %s\n", r.tool, r.mode, r.failed)
		}
	}
	for _, r := range runs {
		if len(r.series) == 0 {
			continue
		}
		fmt.Fprintf(w, "browser memory of %s render=%s, by 100 pages rendered (the most of the samples in each, every 250 ms):\n", r.tool, r.mode)
		fmt.Fprintf(w, "  %-11s %8s %10s %10s %9s\n", "pages", "until s", "PSS", "RSS", "browsers")
		var top memSample
		window := int64(0)
		flush := func(end memSample) {
			fmt.Fprintf(w, "  %5d-%-5d %8.1f %6.0f MiB %6.0f MiB %9d\n", window*100, window*100+99, end.at.Seconds(),
				float64(top.pss)/(1<<20), float64(top.rss)/(1<<20), top.browsers)
		}
		for i, sm := range r.series {
			if sm.pages/100 != window {
				flush(r.series[max(i-1, 0)])
				window, top = sm.pages/100, memSample{}
			}
			top.pss, top.rss, top.browsers = max(top.pss, sm.pss), max(top.rss, sm.rss), max(top.browsers, sm.browsers)
		}
		flush(r.series[len(r.series)-1])
	}
}
