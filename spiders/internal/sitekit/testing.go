package sitekit

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"sync"
)

// This file holds helpers for the sites' tests. They take a TB rather than a
// testing.TB so that the package, which the serving binaries link, does not import
// testing.

// TB is the part of testing.TB the test helpers use.
type TB interface {
	Helper()
	Error(args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// Get fetches rawURL and returns its body; it fails t when the fetch fails or the
// status is not wantStatus.
func Get(t TB, rawURL string, wantStatus int) string {
	t.Helper()
	res, err := http.Get(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != wantStatus {
		t.Fatalf("GET %s: status %d, want %d", rawURL, res.StatusCode, wantStatus)
	}
	return string(b)
}

// GetConcurrently has workers goroutines each fetch base+u for every u of urls, rounds
// times over, and waits for them; fetch errors are reported to t.
func GetConcurrently(t TB, base string, urls []string, workers, rounds int) {
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				for _, u := range urls {
					res, err := http.Get(base + u)
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
}

// Field returns the HTML-unescaped first group of the only match of re in body, and
// "<n matches>" when re does not match exactly once.
func Field(re *regexp.Regexp, body string) string {
	m := re.FindAllStringSubmatch(body, -1)
	if len(m) != 1 {
		return fmt.Sprintf("<%d matches>", len(m))
	}
	return html.UnescapeString(m[0][1])
}

// NewRequests returns a server-side GET request for each path?query of urls, with Host
// host, for benchmarks that call a handler directly.
func NewRequests(t TB, host string, urls []string) []*http.Request {
	t.Helper()
	reqs := make([]*http.Request, len(urls))
	for i, u := range urls {
		r, err := http.NewRequest(http.MethodGet, "http://"+host+u, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.RequestURI = u
		reqs[i] = r
	}
	return reqs
}

// Discard is a minimal http.ResponseWriter for benchmarks: it keeps the header H and
// drops the body.
type Discard struct{ H http.Header }

// Header returns d.H.
func (d *Discard) Header() http.Header { return d.H }

// Write drops b.
func (d *Discard) Write(b []byte) (int, error) { return len(b), nil }

// WriteHeader drops the status.
func (d *Discard) WriteHeader(int) {}
