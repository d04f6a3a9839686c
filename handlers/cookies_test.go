package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fetch"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// membersSite needs a session cookie: POST /login (user=alice&password=secret) sets it,
// GET /login-as/<name> sets one for name; /members/<n> and /whoami answer 403 without it.
type membersSite struct {
	logins atomic.Int32
	denied atomic.Int32
}

func (s *membersSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/login" && r.Method == http.MethodPost:
		if r.ParseForm() != nil || r.PostForm.Get("user") != "alice" || r.PostForm.Get("password") != "secret" {
			http.Error(w, "bad login", http.StatusForbidden)
			return
		}
		s.logins.Add(1)
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: "alice", Path: "/", HttpOnly: true})
		http.Redirect(w, r, "/welcome", http.StatusSeeOther)
		return
	case strings.HasPrefix(r.URL.Path, "/login-as/"):
		name := strings.TrimPrefix(r.URL.Path, "/login-as/")
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: name, Path: "/"})
		page(w, "logged in as "+name, "/whoami?as="+name)
		return
	case r.URL.Path == "/robots.txt", r.URL.Path == "/welcome", r.URL.Path == "/":
		page(w, r.URL.Path, "/login-as/bob", "/login-as/carol")
		return
	}
	c, err := r.Cookie("sid")
	if err != nil {
		s.denied.Add(1)
		http.Error(w, "members only", http.StatusForbidden)
		return
	}
	page(w, "hello "+c.Value)
}

// TestLoginThenMembersPagesAcrossTwoFetchProcesses: the spider logs in once for the
// crawl; both fetch processes send the session cookie, so no members page is refused.
// A fetcher that never logged in itself is shown to get in with the shared cookie.
func TestLoginThenMembersPagesAcrossTwoFetchProcesses(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := &membersSite{}
	base := serve(t, site)
	sp := titleSpider("members", base)
	sp.StartURLs = nil
	for i := range 30 {
		sp.StartURLs = append(sp.StartURLs, fmt.Sprintf("%s/members/%d", base, i))
	}
	sp.Login = &spiders.Login{URL: base + "/login", Form: map[string]string{"user": "alice", "password": "secret"}}
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		doc, err := res.Doc()
		if err != nil {
			return err
		}
		out.Yield(spiders.NewItem("page", map[string]any{"title": doc.Find("h1").Text(), "url": res.URL}))
		return nil
	})
	sink := newMemSink()
	runCluster(t, srv, sp, 2, sink, nil)
	if n := site.logins.Load(); n != 1 {
		t.Errorf("logged in %d times, want once for the crawl", n)
	}
	if n := site.denied.Load(); n != 0 {
		t.Errorf("%d members pages refused", n)
	}
	for i := range 30 {
		it, ok := sink.item(fmt.Sprintf(`["page","%s/members/%d"]`, base, i))
		if !ok || it.Fields["title"] != "hello alice" {
			t.Errorf("members page %d: %v %v", i, ok, it.Fields)
		}
	}

	// A fetch process of its own, which never logs in, reads the shared jar.
	ctx := context.Background()
	layout := streams.NewLayout("members", 1)
	hosts, err := frontier.New(frontier.Config{Client: srv.Client(), Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.Close(context.Background())
	f, err := fetch.New(fetch.Config{Settings: sp.Settings, Frontier: hosts, Client: srv.Client(), Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	r, err := f.Do(ctx, &spiders.Request{URL: base + "/members/99"}, fetch.Delivery{})
	defer r.Release()
	res := r.Response
	if err != nil || res == nil || !strings.Contains(string(res.Body), "hello alice") {
		t.Fatalf("fresh fetcher: %v %v; want the members page", res, err)
	}
}

// TestCookieJarSessionsAreKeptApart: requests with cookiejar meta "bob" and "carol"
// log in as different users on one host and each sees only its own session.
func TestCookieJarSessionsAreKeptApart(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := &membersSite{}
	base := serve(t, site)
	sp := titleSpider("jars", base)
	sp.StartURLs = []string{base + "/"}
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		doc, err := res.Doc()
		if err != nil {
			return err
		}
		out.Yield(spiders.NewItem("page", map[string]any{"title": doc.Find("h1").Text(), "url": res.URL}))
		for _, link := range res.Links("a[href]") {
			req, err := res.Follow(link, "parse")
			if err != nil {
				return err
			}
			if name, ok := strings.CutPrefix(req.URL, base+"/login-as/"); ok {
				req.Meta = map[string]any{"cookiejar": name}
			}
			out.Follow(req)
		}
		return nil
	})
	sink := newMemSink()
	runCluster(t, srv, sp, 2, sink, nil)
	for _, name := range []string{"bob", "carol"} {
		it, ok := sink.item(fmt.Sprintf(`["page","%s/whoami?as=%s"]`, base, name))
		if !ok || it.Fields["title"] != "hello "+name {
			t.Errorf("session %s saw %v (stored %v); want hello %s", name, it.Fields, ok, name)
		}
	}
}

// TestCookieJarIsCapped: a site sets 900 cookies over 30 pages and answers 400 to a
// Cookie header over 8 KB (as servers do), plus one cookie of 5 KB: the jar keeps 180
// of the site's cookies and refuses the rest (counted), refuses the 5 KB one, and every
// page is answered 200 and stored.
func TestCookieJarIsCapped(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	var big atomic.Int32
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := len(r.Header.Get("Cookie")); n > 8<<10 {
			http.Error(w, "request header too large", http.StatusBadRequest)
			return
		}
		if strings.Contains(r.Header.Get("Cookie"), "big=") {
			big.Add(1)
		}
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/set/%d", &i); err == nil {
			for j := range 30 {
				http.SetCookie(w, &http.Cookie{Name: fmt.Sprintf("c%d_%d", i, j), Value: "xxxxxxxxxx", Path: "/"})
			}
		}
		if r.URL.Path == "/big" {
			http.SetCookie(w, &http.Cookie{Name: "big", Value: strings.Repeat("b", 5000), Path: "/"})
		}
		var links []string
		if r.URL.Path == "/" {
			links = append(links, "/big")
			for i := range 30 {
				links = append(links, fmt.Sprintf("/set/%d", i))
			}
		}
		page(w, r.URL.Path, links...)
	}))
	base := serve(t, site)
	for _, mode := range []string{spiders.CookiesShared, spiders.CookiesProcess} {
		big.Store(0)
		name := "cookiecap-" + mode
		sp := titleSpider(name, base)
		sp.StartURLs = []string{base + "/"}
		sp.Settings.ObeyRobots = new(bool)
		sp.Settings.Cookies = mode
		sp.Settings.PerHostConcurrency = 1 // one page after the other: each sends the jar so far
		sink := newMemSink()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		if err := runCrawl(ctx, t, srv.Client(), sp, sink, nil); err != nil {
			t.Fatal(err)
		}
		if n := len(sink.keys()); n != 32 {
			t.Errorf("%s: %d pages stored, want 32 (every page answered 200)", mode, n)
		}
		st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout(name, 1))
		if err != nil {
			t.Fatal(err)
		}
		stored := int64(180)
		if mode == spiders.CookiesProcess {
			stored = 0 // counted for the shared jar only
		}
		if st.Stats["cookies_refused_over_cap"] != 720 || st.Stats["cookies_refused_too_large"] != 1 ||
			st.Stats["cookies_stored"] != stored || st.Stats["http_errors_final"] != 0 || big.Load() != 0 {
			t.Errorf("%s: refused over cap %d (want 720), too large %d (want 1), stored %d (want %d), http errors %d (want 0), big cookie sent %d times (want 0)",
				mode, st.Stats["cookies_refused_over_cap"], st.Stats["cookies_refused_too_large"], st.Stats["cookies_stored"], stored,
				st.Stats["http_errors_final"], big.Load())
		}
		cancel()
	}
}
