package cli

import (
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCrawlWhoseStartURLsFailEndsNonZero: `crawl` of a start URL that answers 404, of a
// port where nothing listens (with robots.txt obeyed, and without) and of a host whose
// robots.txt answers 503 exits 1 with the summary on stdout and one error on stderr
// naming the start URL and what became of it. Each ends within the bounds its spider
// sets: robots_unreachable_tries 1 gives a host up at its first failed robots.txt (the
// default, 3 tries 15 s and 30 s apart, took 45 s), max_retries 1 with --retry-backoff
// 50ms retries a refused page once.
func TestCrawlWhoseStartURLsFailEndsNonZero(t *testing.T) {
	t.Parallel()
	site := serveSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
		case "/missing":
			http.NotFound(w, r)
		default:
			w.Write([]byte("<h1>a page</h1>"))
		}
	}))
	sick := serveSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("<h1>a page</h1>"))
	}))
	down := "http://" + closedPort(t) + "/"
	origin := func(u string) string { return strings.TrimSuffix(u, "/") }
	for _, tt := range []struct {
		name, start, settings string
		args                  []string
		want                  string // the error line, a regular expression
	}{
		{"answers-404", site + "missing", "", nil,
			`start URL ` + regexp.QuoteMeta(site+"missing") + `: answered HTTP 404 \(final, not retried\)`},
		{"nothing-listens", down, "  robots_unreachable_tries: 1\n", nil,
			`every request was dropped: 1 with a host whose robots.txt stayed unreachable \(.*\); start URL ` + regexp.QuoteMeta(down) +
				`: robots.txt of ` + regexp.QuoteMeta(origin(down)) + ` unreachable after 1 tries \(last: .*connect: connection refused\)`},
		{"nothing-listens-no-robots", down, "  obey_robots: false\n  max_retries: 1\n", []string{"--retry-backoff", "50ms"},
			`start URL ` + regexp.QuoteMeta(down) + `: gave up after 1 retries: Get "` + regexp.QuoteMeta(down) + `": dial tcp .*connect: connection refused`},
		{"robots-503", sick, "  robots_unreachable_tries: 1\n", nil,
			`every request was dropped: 1 with a host whose robots.txt stayed unreachable \(.*\); start URL ` + regexp.QuoteMeta(sick) +
				`: robots.txt of ` + regexp.QuoteMeta(origin(sick)) + ` unreachable after 1 tries \(last: HTTP 503\)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := strings.ReplaceAll(tt.name, "-", "")
			spider := writeFile(t, name+".yaml", "name: "+name+"\nstart_urls: ["+tt.start+"]\nsettings:\n  allow_networks: [127.0.0.1/32]\n"+tt.settings)
			args := append([]string{"crawl", spider, "--out", filepath.Join(t.TempDir(), "items.jsonl")}, tt.args...)
			began := time.Now()
			code, stdout, stderr := runCLI(t, crawlTimeout, nil, args...)
			took := time.Since(began)
			want := regexp.MustCompile(`(?m)^streamcrawl: handlers: crawl ` + name + ` fetched no page: ` + tt.want + `$`)
			if code != 1 || !want.MatchString(stderr) || !strings.Contains(stdout, "crawl "+name+": done=true") {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1, the summary and a line matching %s", code, stdout, tail(stderr, 4<<10), want)
			}
			t.Logf("exit %d after %v: %s", code, took.Round(time.Millisecond), want.FindString(stderr))
		})
	}
}
