package dashboard

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// fleetView is the fleet page: every crawl registered with the fleet, its state and
// figures, read with fleet.ReadRows (a status read per crawl, the same cost for a crawl
// of any size) every interval while the page is being read. Redis keeps no rate, so
// pages/s is the page's own: the change of each crawl's pages counter over the samples
// of the last rateWindow, as the one-crawl page computes its rates. Each crawl's own page
// (a one-crawl Dashboard) is made when first asked for and sampled by the same loop; it
// is dropped when the crawl leaves the registry.
type fleetView struct {
	cfg Config
	reg *fleet.Registry

	mu      sync.Mutex
	rows    []fleet.Row
	lastErr string
	pages   []pagesSample // the last rateWindow of pages counters, oldest first
	readAt  time.Time     // when the page last asked
	crawls  map[string]*Dashboard
}

// pagesSample is every crawl's pages counter at one read.
type pagesSample struct {
	at    time.Time
	pages map[string]int64
}

func newFleetView(cfg Config) *fleetView {
	return &fleetView{cfg: cfg, reg: fleet.New(cfg.Client), crawls: map[string]*Dashboard{}}
}

// run samples the fleet while its page is read, and each crawl page while it is read,
// every interval until ctx ends, then returns nil.
func (f *fleetView) run(ctx context.Context, every time.Duration) error {
	return loop.Every(ctx, every, loop.Config{Now: true}, func(ctx context.Context) error {
		f.mu.Lock()
		idle := time.Since(f.readAt) > watched && f.rows != nil
		f.mu.Unlock()
		if !idle {
			f.sample(ctx)
		}
		f.mu.Lock()
		crawls := make([]*Dashboard, 0, len(f.crawls))
		for _, d := range f.crawls {
			crawls = append(crawls, d)
		}
		f.mu.Unlock()
		for _, d := range crawls {
			d.s.tick(ctx)
		}
		return nil
	})
}

// sample reads the fleet's rows and rates them against the samples of the last
// rateWindow.
func (f *fleetView) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := fleet.ReadRows(ctx, f.cfg.Client, 0)
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.lastErr = err.Error()
		return
	}
	f.lastErr = ""
	cur := pagesSample{at: now, pages: make(map[string]int64, len(rows))}
	names := make(map[string]bool, len(rows))
	for _, r := range rows {
		cur.pages[r.Name] = r.PagesFetched
		names[r.Name] = true
	}
	for len(f.pages) > 0 && now.Sub(f.pages[0].at) > rateWindow {
		f.pages = f.pages[1:]
	}
	if len(f.pages) > 0 {
		first := f.pages[0]
		if d := now.Sub(first.at).Seconds(); d > 0 {
			for i := range rows {
				if p, ok := first.pages[rows[i].Name]; ok {
					rows[i].PagesPerSec = float64(max(rows[i].PagesFetched-p, 0)) / d
				}
			}
		}
	}
	f.pages = append(f.pages, cur)
	if rows == nil {
		rows = []fleet.Row{}
	}
	f.rows = rows
	for name := range f.crawls {
		if !names[name] {
			delete(f.crawls, name) // unregistered: its page goes with it
		}
	}
}

// snapshot returns the latest rows and notes that the page is being read.
func (f *fleetView) snapshot() ([]fleet.Row, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readAt = time.Now()
	return append([]fleet.Row(nil), f.rows...), f.lastErr
}

// fleetHandler serves the fleet page at /, its assets under /static/, GET /api/fleet
// (the rows), POST /api/crawls/NAME/pause and /resume (JSON only, same origin only), and
// each registered crawl's one-crawl page and API under /crawls/NAME/.
func (d *Dashboard) fleetHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", staticHandler())
	mux.HandleFunc("GET /{$}", d.fleetPage)
	mux.HandleFunc("GET /api/fleet", d.fleetStatus)
	mux.HandleFunc("POST /api/crawls/{name}/{action}", d.steer)
	mux.HandleFunc("GET /crawls/{name}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/crawls/"+url.PathEscape(r.PathValue("name"))+"/", http.StatusFound)
	})
	mux.HandleFunc("/crawls/{name}/{rest...}", d.crawlPage)
	return mux
}

// staticHandler serves the page's embedded assets.
func staticHandler() http.Handler {
	sub, _ := fs.Sub(static, "static")
	_ = mime.AddExtensionType(".js", "text/javascript")
	return http.StripPrefix("/static/", http.FileServerFS(sub))
}

// fleetTemplate is the fleet page, rendered with the latest rows so that it shows them
// before its script runs (the script then refreshes them every second).
var fleetTemplate = template.Must(template.New("fleet.html").Funcs(template.FuncMap{
	"num": num,
	"int": func(n int64) string { return num(float64(n)) },
}).ParseFS(static, "static/fleet.html"))

// fleetPageData is what the fleet template shows.
type fleetPageData struct {
	Rows  []fleet.Row
	Error string
}

func (d *Dashboard) fleetPage(w http.ResponseWriter, _ *http.Request) {
	rows, lastErr := d.fleet.snapshot()
	var b bytes.Buffer
	if err := fleetTemplate.Execute(&b, fleetPageData{Rows: rows, Error: lastErr}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// fleetReply is GET /api/fleet.
type fleetReply struct {
	Crawls []fleet.Row `json:"crawls"`
	Error  string      `json:"error,omitempty"`
}

func (d *Dashboard) fleetStatus(w http.ResponseWriter, _ *http.Request) {
	rows, lastErr := d.fleet.snapshot()
	if rows == nil {
		rows = []fleet.Row{}
	}
	writeJSON(w, http.StatusOK, fleetReply{Crawls: rows, Error: lastErr})
}

// steer pauses or resumes a crawl. Like the retry of dead letters it takes JSON only (a
// page of another site cannot send it without the browser asking first, and this
// server answers no such question), and it refuses a request whose Origin is not this
// server's: a form, an image or a script of another site cannot pause a crawl.
func (d *Dashboard) steer(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "cross-origin request refused"})
		return
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "want application/json"})
		return
	}
	name := r.PathValue("name")
	if err := spiders.ValidateName(name); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	var state fleet.State
	var err error
	switch r.PathValue("action") {
	case "pause":
		if _, err = d.fleet.reg.Pause(r.Context(), name); err == nil {
			state = fleet.Paused
		}
	case "resume":
		state, err = d.fleet.reg.Resume(r.Context(), name)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "want pause or resume"})
		return
	}
	switch {
	case errors.Is(err, fleet.ErrUnknownCrawl):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	case errors.Is(err, fleet.ErrState):
		writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
		return
	case err != nil:
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	d.log.Info("crawl steered from the dashboard", zap.String("crawl", name), zap.String("state", string(state)))
	d.fleet.mu.Lock()
	d.fleet.readAt = time.Time{} // the next tick reads the fleet again: the page shows the change
	d.fleet.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"crawl": name, "state": string(state)})
}

// sameOrigin tells whether a request came from a page of this server: a browser names
// the page's origin in Origin on every POST; a request without one (curl, a script) is
// not a browser's and is let through.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && u.Host == r.Host
}

// crawlPage serves a registered crawl's one-crawl page and API under /crawls/NAME/.
func (d *Dashboard) crawlPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := spiders.ValidateName(name); err != nil {
		http.Error(w, "dashboard: "+err.Error(), http.StatusBadRequest)
		return
	}
	if _, err := d.fleet.reg.Get(r.Context(), name); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, fleet.ErrUnknownCrawl) {
			code = http.StatusNotFound
		}
		http.Error(w, "dashboard: "+err.Error(), code)
		return
	}
	c, err := d.crawlDashboard(r.Context(), name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	http.StripPrefix("/crawls/"+name, c.Handler()).ServeHTTP(w, r)
}

// crawlDashboard returns the one-crawl dashboard of name, made (and sampled once, so
// that its page has figures at once) when first asked for.
func (d *Dashboard) crawlDashboard(ctx context.Context, name string) (*Dashboard, error) {
	f := d.fleet
	f.mu.Lock()
	c := f.crawls[name]
	f.mu.Unlock()
	if c != nil {
		return c, nil
	}
	cfg := f.cfg
	cfg.Crawl = name
	c, err := New(cfg)
	if err != nil {
		return nil, err
	}
	c.inFleet = true
	c.s.sample(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if prev := f.crawls[name]; prev != nil {
		return prev, nil // another request made it meanwhile
	}
	f.crawls[name] = c
	return c, nil
}
