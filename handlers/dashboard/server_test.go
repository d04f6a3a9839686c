package dashboard_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/handlers/dashboard"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestRetryAPIRefusesWhatIsNotJSON: a form post (what a page of another site can send
// without asking) is refused; an unknown dead letter is a conflict naming it.
func TestRetryAPIRefusesWhatIsNotJSON(t *testing.T) {
	srv := streamstest.Start(t)
	d, err := dashboard.New(dashboard.Config{Client: srv.Client(), Crawl: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	ui := httptest.NewServer(d.Handler())
	defer ui.Close()
	post := func(ct, body string) (int, map[string]any) {
		res, err := http.Post(ui.URL+"/api/dead/retry", ct, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(res.Body).Decode(&out)
		return res.StatusCode, out
	}
	if code, _ := post("application/x-www-form-urlencoded", "ids=1-0"); code != http.StatusUnsupportedMediaType {
		t.Errorf("form post: %d, want 415", code)
	}
	if code, _ := post("application/json", `{"ids": []}`); code != http.StatusBadRequest {
		t.Errorf("no ids: %d, want 400", code)
	}
	code, out := post("application/json", `{"ids": ["1-0"]}`)
	if code != http.StatusConflict || !strings.Contains(out["error"].(string), "no dead letter 1-0") {
		t.Errorf("unknown id: %d %v, want 409 naming it", code, out)
	}
	if _, err := dashboard.New(dashboard.Config{Crawl: "shop"}); err == nil {
		t.Error("a dashboard without a client was accepted")
	}
	// The page and its script are served from the binary.
	for path, want := range map[string]string{"/": "<canvas id=\"chart-rates\"", "/static/app.js": "/api/dead/retry"} {
		res, err := http.Get(ui.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d, want 200 with %q", path, res.StatusCode, want)
		}
	}
}
