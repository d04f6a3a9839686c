// Package broadsite serves a broad web on loopback for tests and benchmarks: many
// hosts, each on its own loopback address (127.0.X.Y), each with a home page linking to
// its other pages and a robots.txt, answering after a fixed latency. It records when
// every request reached every host and how many were in flight at once, so a crawl's
// politeness can be checked from the server's side.
package broadsite

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Web is a set of hosts on loopback addresses.
type Web struct {
	pages   int
	latency time.Duration
	robots  string
	hosts   []*host
	servers []*http.Server
}

// host is one server of the web and what it saw.
type host struct {
	base    string // http://127.0.X.Y:port
	mu      sync.Mutex
	hits    []Hit
	now     int
	maxNow  int
	slowFor int // answer 429 to this many page requests first
}

// Hit is one request a host received.
type Hit struct {
	Host string    // the host's base URL (http://127.0.X.Y:port)
	Path string    // with the query, if any
	At   time.Time // when the host's handler started
	// Slowed is set when the host answered 429 (see SlowDown).
	Slowed bool
}

// Config configures a Web.
type Config struct {
	// Hosts is the number of hosts (at most 60,000).
	Hosts int
	// Pages per host, home page included (at least 1).
	Pages int
	// Latency is how long each page takes to answer.
	Latency time.Duration
	// Robots is the body of every host's robots.txt (empty: 404).
	Robots string
}

// Start serves the web; Close stops it.
func Start(cfg Config) (*Web, error) {
	if cfg.Hosts < 1 || cfg.Hosts > 60000 || cfg.Pages < 1 {
		return nil, errors.New("broadsite: want 1 to 60,000 hosts and at least one page")
	}
	w := &Web{pages: cfg.Pages, latency: cfg.Latency, robots: cfg.Robots}
	for i := range cfg.Hosts {
		addr := fmt.Sprintf("127.0.%d.%d:0", 1+i/250, 1+i%250)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("broadsite: listen on %s: %w", addr, err)
		}
		h := &host{base: "http://" + ln.Addr().String()}
		srv := &http.Server{Handler: w.handler(h), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		w.hosts = append(w.hosts, h)
		w.servers = append(w.servers, srv)
	}
	return w, nil
}

// StartURLs returns every host's home page.
func (w *Web) StartURLs() []string {
	out := make([]string, len(w.hosts))
	for i, h := range w.hosts {
		out[i] = h.base + "/"
	}
	return out
}

// SpiderYAML returns the YAML spider of a polite broad crawl of the web, called broad:
// every host's home page as a start URL, links followed, one "page" item (its title) per
// page, one request at a time per host and delay between two to a host.
func (w *Web) SpiderYAML(delay time.Duration) string {
	var b strings.Builder
	b.WriteString("name: broad\nstart_urls:\n")
	for _, s := range w.StartURLs() {
		fmt.Fprintf(&b, "  - %s\n", s)
	}
	fmt.Fprintf(&b, `follow:
  - links: "a[href]"
items:
  - type: page
    fields:
      title: "title::text"
settings:
  concurrency: 64
  per_host_concurrency: 1
  per_host_delay: %s
  allow_networks: [127.0.0.0/8]
  capacity: 1000000
`, delay)
	return b.String()
}

// Bases returns every host's base URL (http://127.0.X.Y:port).
func (w *Web) Bases() []string {
	out := make([]string, len(w.hosts))
	for i, h := range w.hosts {
		out[i] = h.base
	}
	return out
}

// SlowDown makes host i answer its next n page requests with 429 and Retry-After.
func (w *Web) SlowDown(i, n int) {
	h := w.hosts[i]
	h.mu.Lock()
	h.slowFor = n
	h.mu.Unlock()
}

// Close stops every host.
func (w *Web) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range w.servers {
		_ = s.Shutdown(ctx)
	}
}

func (w *Web) handler(h *host) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		slow := h.slowFor > 0 && r.URL.Path != "/robots.txt"
		if slow {
			h.slowFor--
		}
		h.hits = append(h.hits, Hit{Host: h.base, Path: r.URL.RequestURI(), At: time.Now(), Slowed: slow})
		h.now++
		h.maxNow = max(h.maxNow, h.now)
		h.mu.Unlock()
		defer func() { h.mu.Lock(); h.now--; h.mu.Unlock() }()
		if r.URL.Path == "/robots.txt" {
			if w.robots == "" {
				http.NotFound(rw, r)
				return
			}
			_, _ = rw.Write([]byte(w.robots))
			return
		}
		time.Sleep(w.latency)
		if slow {
			rw.Header().Set("Retry-After", "1")
			http.Error(rw, "slow down", http.StatusTooManyRequests)
			return
		}
		n, ok := pageOf(r.URL.Path)
		if !ok || n >= w.pages {
			http.NotFound(rw, r)
			return
		}
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		var b strings.Builder
		fmt.Fprintf(&b, "<html><head><title>%s page %d</title></head><body><h1>page %d</h1>", h.base, n, n)
		if n == 0 {
			for i := 1; i < w.pages; i++ {
				fmt.Fprintf(&b, `<a href="/p/%d">page %d</a> `, i, i)
			}
		}
		b.WriteString("</body></html>")
		_, _ = rw.Write([]byte(b.String()))
	})
}

// pageOf reads "/" (0) and "/p/N".
func pageOf(path string) (int, bool) {
	if path == "/" {
		return 0, true
	}
	rest, ok := strings.CutPrefix(path, "/p/")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// Hits returns every request every host received, in order of arrival per host.
func (w *Web) Hits() [][]Hit {
	out := make([][]Hit, len(w.hosts))
	for i, h := range w.hosts {
		h.mu.Lock()
		out[i] = append([]Hit(nil), h.hits...)
		h.mu.Unlock()
	}
	return out
}

// Report is what the hosts saw of a crawl, against a per-host delay.
type Report struct {
	Requests    int           // requests received, robots.txt included
	Pages       int           // distinct pages fetched
	Duplicates  int           // page requests beyond the first of each page
	Missing     int           // pages never fetched
	Span        time.Duration // first request to last, over all hosts
	Limit       time.Duration // (pages−1)×delay: the least span the delay allows
	Gaps        int           // gaps between two requests to one host
	ShortGaps   int           // gaps below delay − tolerance
	MinGap      time.Duration // the shortest of those gaps
	MedianGap   time.Duration // their median
	MaxInFlight int           // most requests one host had in flight at once
}

// Report sums up the hits against delay (gaps shorter than delay − tolerance count as
// short). Every request counts in the gaps, robots.txt included.
func (w *Web) Report(delay, tolerance time.Duration) Report {
	var r Report
	var first, last time.Time
	var gaps []time.Duration
	r.MinGap = time.Duration(1<<63 - 1)
	for i, hits := range w.Hits() {
		h := w.hosts[i]
		h.mu.Lock()
		r.MaxInFlight = max(r.MaxInFlight, h.maxNow)
		h.mu.Unlock()
		seen := map[string]int{}
		for j, hit := range hits {
			r.Requests++
			if first.IsZero() || hit.At.Before(first) {
				first = hit.At
			}
			if hit.At.After(last) {
				last = hit.At
			}
			if hit.Path != "/robots.txt" && !hit.Slowed {
				seen[hit.Path]++
			}
			if j > 0 {
				g := hit.At.Sub(hits[j-1].At)
				gaps = append(gaps, g)
				r.MinGap = min(r.MinGap, g)
				if g < delay-tolerance {
					r.ShortGaps++
				}
			}
		}
		for n := range w.pages {
			path := "/"
			if n > 0 {
				path = "/p/" + strconv.Itoa(n)
			}
			switch c := seen[path]; {
			case c == 0:
				r.Missing++
			default:
				r.Pages++
				r.Duplicates += c - 1
			}
		}
	}
	r.Span = last.Sub(first)
	r.Limit = time.Duration(w.pages-1) * delay
	r.Gaps = len(gaps)
	if len(gaps) > 0 {
		sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
		r.MedianGap = gaps[len(gaps)/2]
	} else {
		r.MinGap = 0
	}
	return r
}
