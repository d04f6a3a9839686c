package cli

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// The secrets of TestCredentialsShowNowhere: none of them, nor the Basic auth made of
// them, may appear in anything the crawl writes for people or beside the pages.
const (
	siteSecret  = "SitePw4f9q"
	proxySecret = "ProxyPw7k2m"
	redisSecret = "RedisPw3x8z"
)

// TestCredentialsShowNowhere: a crawl whose start URL carries Basic auth credentials
// (the site refuses requests without them), whose proxy needs its own, and whose Redis
// URL has a password, with a page that fails for good (a dead letter) and an archiver
// writing WARC: the requests reach the site with the credentials, and not one log line
// of the crawl or the archiver, line of `dead list` (table or JSON) or `status`, item,
// WARC record (decompressed) or dashboard answer shows a secret; nor does the error of
// any of 11 malformed Redis URLs holding one. Plain, and with every page rendered (the
// browser's errors and logs hold URLs of their own).
func TestCredentialsShowNowhere(t *testing.T) {
	t.Parallel()
	for _, render := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "rendered"}[render], func(t *testing.T) {
			t.Parallel()
			testCredentialsShowNowhere(t, render)
		})
	}
}

func testCredentialsShowNowhere(t *testing.T, render bool) {
	srv := streamstest.Start(t)
	if err := srv.Client().ConfigSet(context.Background(), "requirepass", redisSecret).Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: redisSecret})
	t.Cleanup(func() { _ = rdb.Close() })
	redisURL := "redis://:" + redisSecret + "@" + srv.Addr

	var authorized atomic.Int64
	site := serveSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != siteSecret {
			w.Header().Set("WWW-Authenticate", `Basic realm="s"`)
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		authorized.Add(1)
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<html><head><title>home</title></head><body><h1>home</h1><a href="/page">p</a><a href="/broken">b</a></body></html>`)
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<html><head><title>page</title></head><body><h1>page</h1></body></html>`)
		default:
			http.Error(w, "down for good", http.StatusServiceUnavailable)
		}
	}))
	var proxied atomic.Int64 // the proxy's handlers run at once
	proxy := serveSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte("px:"+proxySecret))
		if r.Header.Get("Proxy-Authorization") != want || !r.URL.IsAbs() {
			http.Error(w, "proxy auth", http.StatusProxyAuthRequired)
			return
		}
		proxied.Add(1)
		out, _ := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), nil)
		out.Header = r.Header.Clone()
		out.Header.Del("Proxy-Authorization")
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	start := strings.Replace(site, "http://", "http://user:"+siteSecret+"@", 1)
	proxyURL := strings.Replace(strings.TrimSuffix(proxy, "/"), "http://", "http://px:"+proxySecret+"@", 1)
	rendered, proxies := "", "  proxies: ["+proxyURL+"]\n"
	if render {
		// The browser's own proxy path is not part of this test (see the report of
		// issue 42): the rendered run has the site's and Redis's credentials.
		rendered, proxies = "render: true\n", ""
	}
	spider := writeFile(t, "secret.yaml", "name: secret\nstart_urls: ["+start+"]\n"+rendered+"settings:\n"+
		"  allow_networks: [127.0.0.1/32]\n  max_retries: 0\n"+proxies+
		"follow:\n  - links: \"a[href]\"\n"+
		"items:\n  - type: page\n    fields:\n      title: \"h1::text\"\n")

	var texts []string // everything to grep, named
	add := func(name, s string) { texts = append(texts, name+"\n"+s) }

	code, stdout, stderr := runCLI(t, 30*time.Second, nil, "seed", spider, "--redis", redisURL)
	add("seed", stdout+stderr)
	if code != 0 {
		t.Fatalf("seed: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr = runCLI(t, 30*time.Second, nil, "archive", "--create-group", "--redis", redisURL, "--crawl", "secret")
	add("archive --create-group", stdout+stderr)
	if code != 0 {
		t.Fatalf("archive --create-group: exit %d\n%s", code, stderr)
	}
	items := filepath.Join(t.TempDir(), "items.jsonl")
	code, stdout, stderr = runCLI(t, crawlTimeout, nil, "crawl", spider, "--redis", redisURL, "--out", items, "--log-level", "debug")
	add("crawl", stdout+stderr)
	if authorized.Load() == 0 || proxied.Load() == 0 && !render {
		t.Fatalf("crawl: exit %d, %d requests authorized by the site, %d by the proxy; want some of each\n%s", code, authorized.Load(), proxied.Load(), tail(stderr, 4<<10))
	}
	b, err := os.ReadFile(items)
	if err != nil || !strings.Contains(string(b), `"page"`) {
		t.Fatalf("items: %v\n%s", err, b)
	}
	add("items", string(b))

	warcDir := t.TempDir()
	code, stdout, stderr = runCLI(t, crawlTimeout, nil, "archive", "--until-done", "--redis", redisURL, "--crawl", "secret", "--out", warcDir, "--log-level", "debug")
	add("archive", stdout+stderr)
	if code != 0 {
		t.Fatalf("archive: exit %d\n%s", code, tail(stderr, 4<<10))
	}
	warcs := readWARCTexts(t, warcDir)
	if !strings.Contains(warcs, "WARC-Target-URI: "+site+"page") {
		t.Errorf("WARC has no record of %spage", site)
	}
	add("warc", warcs)

	for _, args := range [][]string{{"dead", "list"}, {"dead", "list", "--json"}, {"status"}} {
		code, stdout, stderr = runCLI(t, 30*time.Second, nil, append(args, "--redis", redisURL, "--crawl", "secret")...)
		add(strings.Join(args, " "), stdout+stderr)
		if code != 0 {
			t.Errorf("%s: exit %d\n%s", args, code, stderr)
		}
		if args[0] == "dead" && !strings.Contains(stdout, site+"broken") {
			t.Errorf("%s does not list the dead letter of %sbroken:\n%s", args, site, stdout)
		}
	}

	dash := startProc(t, "dashboard", nil, "dashboard", "--redis", redisURL, "--crawl", "secret", "--addr", "127.0.0.1:0")
	addr := ""
	for deadline := time.Now().Add(30 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if i := strings.Index(dash.Stderr(), "http://127.0.0.1:"); i >= 0 {
			rest := dash.Stderr()[i:]
			addr = rest[:strings.IndexAny(rest+" \n\"", " \n\"")]
		}
	}
	if addr == "" {
		t.Fatalf("dashboard did not say where it listens:\n%s", dash.Stderr())
	}
	for _, path := range []string{"/api/dead", "/api/status"} {
		resp, err := http.Get(strings.TrimSuffix(addr, "/") + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		add("dashboard "+path, string(body))
		if path == "/api/dead" && !strings.Contains(string(body), site+"broken") {
			t.Errorf("dashboard %s does not list %sbroken: %s", path, site, body)
		}
	}
	dash.Kill()
	add("dashboard log", dash.Stderr())

	for _, bad := range []string{
		"redis://:" + redisSecret + "@127.0.0.1:notaport",
		"redis://u:" + redisSecret + "@[::1:6379",
		"redis://u:" + redisSecret + "@127.0.0.1:6379%zz",
		"redis://u:" + redisSecret + " @127.0.0.1:6379",
		"redi$s://u:" + redisSecret + "@127.0.0.1:6379",
		"redis:///u:" + redisSecret + "@127.0.0.1:6379",
		"redis://u:" + redisSecret + "@127.0.0.1:6379/0?master_name=m&password=" + redisSecret + "&dial_timeout=x",
		"redis://u:" + redisSecret + "@127.0.0.1:6379/0?password=" + redisSecret + "&bogus=1",
		"redis+cluster://u:" + redisSecret + "@127.0.0.1:6379,:bad/0",
		"u:" + redisSecret + "@127.0.0.1:6379",
		"redis//u:" + redisSecret + "@127.0.0.1:6379",
	} {
		code, stdout, stderr = runCLI(t, 30*time.Second, nil, "status", "--redis", bad, "--crawl", "secret")
		add("status --redis "+bad, stdout+stderr)
		if code == 0 {
			t.Errorf("status --redis %q: exit 0", bad)
		}
	}

	secrets := []string{siteSecret, proxySecret, redisSecret,
		base64.StdEncoding.EncodeToString([]byte("user:" + siteSecret)), base64.StdEncoding.EncodeToString([]byte("px:" + proxySecret))}
	found := 0
	for _, text := range texts {
		name, body, _ := strings.Cut(text, "\n")
		for _, s := range secrets {
			if n := strings.Count(body, s); n > 0 {
				found += n
				i := strings.Index(body, s)
				t.Errorf("%s shows %q %d times, first: ...%s...", name, s, n, body[max(0, i-120):min(len(body), i+60)])
			}
		}
	}
	t.Logf("%d texts grepped for %d secrets: %d found", len(texts), len(secrets), found)
}

// readWARCTexts returns every WARC file under dir, decompressed, one after another.
func readWARCTexts(t *testing.T, dir string) string {
	t.Helper()
	var all strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".warc") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		var r io.Reader = f
		if strings.HasSuffix(path, ".gz") {
			zr, err := gzip.NewReader(f)
			if err != nil {
				return err
			}
			r = zr
		}
		_, err = io.Copy(&all, r)
		return err
	})
	if err != nil || all.Len() == 0 {
		t.Fatalf("WARC files in %s: %v (%d bytes)", dir, err, all.Len())
	}
	return all.String()
}
