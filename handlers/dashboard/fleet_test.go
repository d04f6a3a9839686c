package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/dashboard"
	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestFleetPageListsAndSteersTheCrawls: without a crawl the dashboard serves the fleet
// page: three registered crawls with their states and figures, a pause button for the
// active ones and a resume button for the paused one; pause and resume through its API
// change the registry's state, and a cross-origin or form post changes nothing; each
// registered crawl's own page is one click away, an unregistered or invalid name is not.
func TestFleetPageListsAndSteersTheCrawls(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg := fleet.New(rdb)
	for _, name := range []string{"alpha", "beta", "gamma"} {
		if _, err := reg.Submit(ctx, fleet.Submission{Name: name, Spider: []byte("name: " + name + "\nstart_urls: [http://127.0.0.1:1/]\n")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reg.Transition(ctx, "beta", []fleet.State{fleet.Queued}, fleet.Running, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Pause(ctx, "gamma"); err != nil {
		t.Fatal(err)
	}
	// alpha has keys: figures to show.
	k := streams.NewKeys("alpha")
	for _, cmd := range [][]any{
		{"HSET", k.Meta, "partitions", 1, "seeded_at", "2026-01-01T00:00:00Z"},
		{"HSET", k.Stats, "pages_fetched", 40, "items_stored", 17},
		{"XADD", k.Requests, "*", "payload", "x"},
		{"XADD", k.Requests, "*", "payload", "y"},
	} {
		if err := rdb.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}

	d, err := dashboard.New(dashboard.Config{Client: rdb, Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go d.Run(ctx)
	ui := httptest.NewServer(d.Handler())
	defer ui.Close()

	// fleetStates reads /api/fleet until it lists three crawls, and returns them.
	type row struct {
		Name    string `json:"name"`
		State   string `json:"state"`
		Items   int64  `json:"items"`
		Waiting int64  `json:"waiting"`
	}
	fleetRows := func() map[string]row {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; {
			var st struct {
				Crawls []row  `json:"crawls"`
				Error  string `json:"error"`
			}
			code, body := get(t, ui.URL+"/api/fleet", nil)
			if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil || st.Error != "" {
				t.Fatalf("GET /api/fleet: %d %q", code, body)
			}
			if len(st.Crawls) == 3 {
				out := map[string]row{}
				for _, r := range st.Crawls {
					out[r.Name] = r
				}
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET /api/fleet: %d crawls, want 3: %s", len(st.Crawls), body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	rows := fleetRows()
	want := map[string]row{"alpha": {"alpha", "queued", 17, 2}, "beta": {"beta", "running", 0, 0}, "gamma": {"gamma", "paused", 0, 0}}
	for name, w := range want {
		if rows[name] != w {
			t.Errorf("/api/fleet row %s = %+v, want %+v", name, rows[name], w)
		}
	}

	// The page as served: each crawl with its state, a link to its page and its button.
	code, page := get(t, ui.URL+"/", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /: %d", code)
	}
	for name, button := range map[string]string{"alpha": "pause", "beta": "pause", "gamma": "resume"} {
		re := regexp.MustCompile(`<tr data-crawl="` + name + `"><td><a href="/crawls/` + name + `/">` + name +
			`</a></td><td><span class="badge ` + want[name].State + `">` + want[name].State + `</span>.*data-action="` + button + `"`)
		if !re.MatchString(page) {
			t.Errorf("the fleet page has no row of %s %s with a %s button:\n%s", name, want[name].State, button, page)
		}
	}

	// Pause and resume through the page's API.
	steer := func(name, action string, hdr map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ui.URL+"/api/crawls/"+name+"/"+action, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	state := func(name string) fleet.State {
		t.Helper()
		c, err := reg.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return c.State
	}
	for _, s := range []struct {
		name, action string
		hdr          map[string]string
		code         int
		want         fleet.State
	}{
		{"beta", "pause", map[string]string{"Origin": ui.URL}, http.StatusOK, fleet.Paused},
		{"beta", "resume", nil, http.StatusOK, fleet.Running}, // it had run: running again
		{"gamma", "resume", nil, http.StatusOK, fleet.Queued}, // never run: queued
		{"gamma", "resume", nil, http.StatusConflict, fleet.Queued},
		{"alpha", "pause", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden, fleet.Queued},
		{"alpha", "pause", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType, fleet.Queued},
		{"alpha", "pause", map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType, fleet.Queued},
		{"alpha", "delete", nil, http.StatusNotFound, fleet.Queued},
		{"alpha", "pause", nil, http.StatusOK, fleet.Paused},
	} {
		code, body := steer(s.name, s.action, s.hdr)
		if code != s.code || state(s.name) != s.want {
			t.Errorf("%s %s with %v: %d %q, crawl %s; want %d and %s", s.action, s.name, s.hdr, code, body, state(s.name), s.code, s.want)
		}
	}
	if code, body := steer("nosuch", "pause", nil); code != http.StatusNotFound {
		t.Errorf("pause of an unregistered crawl: %d %q, want 404", code, body)
	}
	if code, body := steer("no%20such", "pause", nil); code != http.StatusBadRequest {
		t.Errorf("pause of an invalid name: %d %q, want 400", code, body)
	}
	// The page follows: alpha paused now, with a resume button.
	for deadline := time.Now().Add(time.Minute); fleetRows()["alpha"].State != "paused"; {
		if time.Now().After(deadline) {
			t.Fatalf("the fleet page never showed alpha paused")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Each registered crawl's own page, under /crawls/NAME/, with its API.
	for path, want := range map[string]string{
		"/crawls/alpha/":           `<span id="crawl">alpha</span>`,
		"/crawls/alpha":            `<a class="back" href="/">`, // redirected
		"/crawls/alpha/api/status": `"crawl":"alpha"`,
		"/crawls/gamma/api/dead":   `[]`,
		"/crawls/gamma/api/status": `"crawl":"gamma"`,
	} {
		if code, body := get(t, ui.URL+path, nil); code != http.StatusOK || !strings.Contains(body, want) || strings.Contains(body, `"error":`) {
			t.Errorf("GET %s: %d, want 200 with %q:\n%s", path, code, want, body)
		}
	}
	for path, wantCode := range map[string]int{"/crawls/nosuch/": http.StatusNotFound, "/crawls/no%20such/": http.StatusBadRequest,
		"/crawls/nosuch/api/status": http.StatusNotFound} {
		if code, body := get(t, ui.URL+path, nil); code != wantCode {
			t.Errorf("GET %s: %d %q, want %d", path, code, body, wantCode)
		}
	}
	// A page of another site's name is refused, as the one-crawl dashboard refuses it.
	if code, _ := get(t, ui.URL+"/api/fleet", map[string]string{"Host": "evil.example"}); code != http.StatusMisdirectedRequest {
		t.Errorf("GET /api/fleet for host evil.example: %d, want 421", code)
	}
}

// get returns the status and body of a GET of url with the headers hdr (Host sets the
// request's host).
func get(t *testing.T, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
