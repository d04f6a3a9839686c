package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/streamcrawl/streamcrawl/cmd/internal/cli"
	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
)

// fleetRig is a fleet of real `worker` processes (children of this binary) on a
// redis-server of its own, as bench fleet's scenarios run one.
type fleetRig struct {
	url     string
	redis   *child
	c       *streams.Client
	reg     *fleet.Registry
	dir     string // the workers' logs and the crawls' items files ({crawl}.jsonl)
	workers []*exec.Cmd
}

// startFleet starts a redis-server and o.FetchParse `worker --stages fetch,parse`
// processes, o.Store `worker --stages store` processes and o.AllStages workers with
// every stage on it, logging to dir.
func startFleet(ctx context.Context, o *fleetOptions, dir string) (*fleetRig, error) {
	rc, url, err := startRedisChild(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench fleet: needs redis-server on PATH: %w", err)
	}
	r := &fleetRig{url: url, redis: rc, dir: dir}
	if r.c, err = streams.Connect(ctx, streams.ClientOptions{URL: url}); err != nil {
		rc.stop()
		return nil, err
	}
	r.reg = fleet.New(r.c.UniversalClient)
	start := func(name string, args ...string) error {
		args = append([]string{"worker", "--redis", url, "--consumer", name, "--concurrency", strconv.Itoa(o.Concurrency),
			"--log-level", "error", "--retry-backoff", "100ms"}, args...)
		cmd, err := selfCommand(ctx, args...)
		if err != nil {
			return err
		}
		logf, err := os.Create(filepath.Join(dir, name+".log"))
		if err != nil {
			return err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			return err
		}
		r.workers = append(r.workers, cmd)
		return nil
	}
	for i := range o.FetchParse {
		if err = start(fmt.Sprintf("fp-%d", i+1), "--stages", "fetch,parse"); err != nil {
			break
		}
	}
	for i := range o.Store {
		if err != nil {
			break
		}
		err = start(fmt.Sprintf("store-%d", i+1), "--stages", "store", "--out", filepath.Join(dir, "{crawl}.jsonl"))
	}
	for i := range o.AllStages {
		if err != nil {
			break
		}
		err = start(fmt.Sprintf("all-%d", i+1), "--stages", "fetch,parse,store", "--out", filepath.Join(dir, "{crawl}.jsonl"))
	}
	if err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// close stops the workers gracefully (SIGTERM, then a kill after 30 s) and the
// redis-server, and reports the workers that did not exit 0.
func (r *fleetRig) close() error {
	for _, w := range r.workers {
		_ = w.Process.Signal(syscall.SIGTERM)
	}
	var errs []error
	for _, w := range r.workers {
		done := make(chan error, 1)
		go func() { done <- w.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, fmt.Errorf("worker %s: %w (log in %s)", consumerOf(w), err, r.dir))
			}
		case <-time.After(30 * time.Second):
			_ = w.Process.Kill()
			<-done
			errs = append(errs, fmt.Errorf("worker %s: killed 30 s after SIGTERM (log in %s)", consumerOf(w), r.dir))
		}
	}
	r.c.Close()
	r.redis.stop()
	return errors.Join(errs...)
}

// submit registers the YAML spider of the crawl name.
func (r *fleetRig) submit(ctx context.Context, name, yaml string) error {
	_, err := r.reg.Submit(ctx, fleet.Submission{Name: name, Spider: []byte(yaml)})
	return err
}

// waitDone waits until the crawl name has ended and its items file holds every item
// stored (the store worker may write its last lines after another worker marked the
// crawl done); a crawl that failed or was cancelled is an error.
func (r *fleetRig) waitDone(ctx context.Context, name string) error {
	for {
		c, err := r.reg.Get(ctx, name)
		if err == nil && !c.State.Active() {
			if c.State != fleet.Done {
				return fmt.Errorf("crawl %s ended %s: %s (worker logs in %s)", name, c.State, c.LastError, r.dir)
			}
			break
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("crawl %s: %w", name, err)
		}
	}
	_, stored := r.counters(ctx, name)
	for deadline := time.Now().Add(30 * time.Second); lineCount(r.items(name)) < stored && time.Now().Before(deadline); {
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// counters returns the crawl's pages fetched and items stored (its counters in Redis).
func (r *fleetRig) counters(ctx context.Context, name string) (pages, items int64) {
	return crawlCounters(ctx, r.c, streams.NewKeys(name).Stats)
}

// items is the path of the crawl's items file.
func (r *fleetRig) items(name string) string { return filepath.Join(r.dir, name+".jsonl") }

// workerRSS returns each worker's VmRSS in bytes, by its consumer name.
func (r *fleetRig) workerRSS() map[string]int64 {
	out := map[string]int64{}
	for _, w := range r.workers {
		if st, err := procStatus(w.Process.Pid); err == nil {
			out[consumerOf(w)] = st["VmRSS"]
		}
	}
	return out
}

// consumerOf returns the --consumer of a worker's arguments.
func consumerOf(w *exec.Cmd) string {
	for i, a := range w.Args {
		if a == "--consumer" && i+1 < len(w.Args) {
			return w.Args[i+1]
		}
	}
	return w.Args[0]
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// lineCount counts the lines of a file (0 when it does not exist).
func lineCount(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var n int64
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		n++
	}
	return n
}

// fleetSite is a demo shop served in this process on a loopback address of its own
// (127.0.0.x), so that each site is its own host to the crawls.
type fleetSite struct {
	site     *demosite.Site
	ip       string
	base     string
	settings string // more lines of its spiders' settings
}

// serveFleetSite serves a demo shop of pages pages on ip (a free port) until ctx ends;
// its spiders have o's extra settings.
func serveFleetSite(ctx context.Context, o *fleetOptions, ip string, pages int) (*fleetSite, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, fmt.Errorf("bench fleet: serve a site on %s: %w", ip, err)
	}
	s := &fleetSite{site: demosite.New(pages), ip: ip, base: "http://" + ln.Addr().String() + "/"}
	for _, kv := range o.Settings {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			_ = ln.Close()
			return nil, fmt.Errorf("--spider-setting %q: want KEY=VALUE", kv)
		}
		s.settings += fmt.Sprintf("  %s: %s\n", k, v)
	}
	go func() { _ = cli.Serve(ctx, ln, s.site) }()
	return s, nil
}

// spider is the YAML spider called name of the site: the demo shop's items, the
// per-host limit lifted (the fleet's share is the limit), dedup sized for the site.
func (s *fleetSite) spider(name string, pages int) string {
	return fmt.Sprintf(`name: %s
start_urls: [%s]
allowed_domains: [%s]
follow:
  - links: "a[href]"
items:
%ssettings:
  concurrency: 64
  per_host_concurrency: -1
  allow_networks: [127.0.0.0/8]
  capacity: %d
%s`, name, s.base, s.ip, demosite.ItemRules, 2*pages, s.settings)
}

// itemCheck compares a crawl's items file with the site's expected items.
type itemCheck struct {
	Lines, Missing, Wrong, Duplicates int
}

// checkItems reads the items file at path and compares it with want, by url.
func checkItems(path string, want []map[string]string) (itemCheck, error) {
	var ic itemCheck
	byURL := make(map[string]map[string]string, len(want))
	for _, w := range want {
		byURL[w["url"]] = w
	}
	f, err := os.Open(path)
	if err != nil && !os.IsNotExist(err) {
		return ic, err
	}
	seen := map[string]bool{}
	if f != nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			ic.Lines++
			var it map[string]any
			if json.Unmarshal(sc.Bytes(), &it) != nil {
				ic.Wrong++
				continue
			}
			u, _ := it["url"].(string)
			w, ok := byURL[u]
			switch {
			case seen[u]:
				ic.Duplicates++
			case !ok:
				ic.Wrong++
			default:
				seen[u] = true
				for k, v := range w {
					if it[k] != v {
						ic.Wrong++
						break
					}
				}
			}
		}
		if err := sc.Err(); err != nil {
			return ic, err
		}
	}
	for u := range byURL {
		if !seen[u] {
			ic.Missing++
		}
	}
	return ic, nil
}

// fetchCheck is what a site's request counts say of a crawl of it: pages of the site
// fetched, pages fetched more than once (a server error's retries aside) and pages
// never fetched, of those a crawl that obeys robots.txt (the default) reaches.
type fetchCheck struct {
	Fetched, Again, Missed int
	Examples               []string // of the pages fetched twice or never, a few
}

func checkFetches(s *demosite.Site) fetchCheck {
	var fc fetchCheck
	retried := map[string]bool{}
	for _, u := range s.ReachableKind(true, demosite.ServerError) {
		retried[u] = true
	}
	got := s.Requests()
	for _, u := range s.Reachable(true) {
		switch n := got[u]; {
		case n == 0:
			fc.Missed++
			fc.example(u + " never")
		case n > 1 && !retried[u]:
			fc.Again++
			fc.Fetched++
			fc.example(fmt.Sprintf("%s %d times", u, n))
		default:
			fc.Fetched++
		}
	}
	return fc
}

func (fc *fetchCheck) example(s string) {
	if len(fc.Examples) < 3 {
		fc.Examples = append(fc.Examples, s)
	}
}
