package dashboard

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/handlers/internal/conf"
	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

//go:embed static
var static embed.FS

// Defaults of Config.
const (
	DefaultInterval = time.Second
	DefaultHistory  = 600 // samples: 10 minutes at one a second
	DefaultDeadList = 100
	// DefaultAliveIdle is how recently a consumer must have read to count as alive: a
	// stage process reads at least every few seconds even when idle (its blocking read
	// times out), so one silent for longer is gone or stuck.
	DefaultAliveIdle = 15 * time.Second
)

// Config configures a dashboard.
type Config struct {
	// Client reaches the crawl's Redis. Required.
	Client redis.UniversalClient
	// Crawl is the crawl shown. Empty: the fleet page, every crawl registered with the
	// fleet (handlers/fleet) with pause and resume buttons, each crawl's own page under
	// /crawls/NAME/ (see fleet.go).
	Crawl string
	// Interval between samples. Default DefaultInterval.
	Interval time.Duration
	// History is how many samples the charts keep. Default DefaultHistory.
	History int
	// Sampler reads the crawl (shared with the process's /metrics, so that both cost
	// one read per interval). Default: one of its own at Interval.
	Sampler *metrics.Sampler
	// AliveIdle: a consumer that has not read for longer is registered but not alive.
	// Default DefaultAliveIdle.
	AliveIdle time.Duration
	// AllowHosts are the host names, besides IP addresses and localhost, that requests
	// to the page and its API may name in their Host header (the name of a reverse proxy
	// or of the machine). Others are refused with 421 (see checkHost).
	AllowHosts []string
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout bound a connection of
	// Serve. Defaults DefaultReadHeaderTimeout, DefaultReadTimeout, DefaultWriteTimeout
	// and DefaultIdleTimeout.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxBodyBytes caps the body of a request to Serve. Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Logger; nil means no-op.
	Logger *zap.Logger
}

// Dashboard serves one crawl's dashboard. Run samples the crawl; Handler serves the page
// and its API.
type Dashboard struct {
	cfg     Config
	s       *sampler
	fleet   *fleetView // the fleet page's, nil for one crawl's dashboard
	inFleet bool       // one crawl's page served under the fleet page (links back to it)
	log     *zap.Logger
}

// New returns a dashboard for cfg.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Client == nil {
		return nil, errors.New("dashboard: needs a redis client")
	}
	conf.Positive(&cfg.Interval, DefaultInterval)
	conf.Positive(&cfg.History, DefaultHistory)
	conf.Positive(&cfg.AliveIdle, DefaultAliveIdle)
	conf.Positive(&cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	conf.Positive(&cfg.ReadTimeout, DefaultReadTimeout)
	conf.Positive(&cfg.WriteTimeout, DefaultWriteTimeout)
	conf.Positive(&cfg.IdleTimeout, DefaultIdleTimeout)
	conf.Positive(&cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Sampler == nil {
		cfg.Sampler = metrics.NewSampler(cfg.Client, cfg.Interval)
	}
	if cfg.Crawl == "" {
		return &Dashboard{cfg: cfg, fleet: newFleetView(cfg), log: cfg.Logger}, nil
	}
	return &Dashboard{cfg: cfg, s: &sampler{src: cfg.Sampler, rdb: cfg.Client, crawl: cfg.Crawl, keep: cfg.History,
		alive: cfg.AliveIdle}, log: cfg.Logger}, nil
}

// Run samples the crawl at once and then every Interval while the page is being read
// (the last read of its status within a few seconds), until ctx ends, then returns nil.
func (d *Dashboard) Run(ctx context.Context) error {
	if d.fleet != nil {
		return d.fleet.run(ctx, d.cfg.Interval)
	}
	return d.s.run(ctx, d.cfg.Interval)
}

// Handler serves the page at /, its assets under /static/, and the API: GET /api/status,
// GET /api/dead, POST /api/dead/retry ({"ids": [...]}, JSON only). It answers only
// requests whose Host is an IP address, localhost or one of Config.AllowHosts. The fleet
// page's dashboard serves the paths of fleetHandler instead.
func (d *Dashboard) Handler() http.Handler {
	if d.fleet != nil {
		return checkHost(d.fleetHandler(), d.cfg.AllowHosts)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", staticHandler())
	mux.HandleFunc("GET /{$}", d.page)
	mux.HandleFunc("GET /api/status", d.status)
	mux.HandleFunc("GET /api/dead", d.dead)
	mux.HandleFunc("POST /api/dead/retry", d.retry)
	return checkHost(mux, d.cfg.AllowHosts)
}

// pageTemplate is the page, rendered with the latest sample so that it shows the
// crawl's figures before its script runs (the script then refreshes them every second).
var pageTemplate = template.Must(template.New("index.html").Funcs(template.FuncMap{
	"num": num,
	"int": func(n int64) string { return num(float64(n)) },
	"mib": func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) },
}).ParseFS(static, "static/index.html"))

// pageData is what the page template shows.
type pageData struct {
	Crawl  string
	Fleet  bool   // served under the fleet page: a link back to it
	State  string // connecting, running, continuous (running, waiting for revisits when idle) or done
	Error  string
	Last   Sample
	Queue  int64 // frontier and delayed
	Stages []stageRow
}

// stageRow is one row of the page's stages table.
type stageRow struct {
	Stage, Consumers string
	Pending, Unread  string
}

// stateOf is the page's badge for a sample (app.js says the same).
func stateOf(s Sample) string {
	switch {
	case s.Done:
		return "done"
	case s.Continuous:
		return "continuous"
	}
	return "running"
}

func (d *Dashboard) page(w http.ResponseWriter, _ *http.Request) {
	h, _, _, lastErr := d.s.snapshot()
	p := pageData{Crawl: d.cfg.Crawl, Fleet: d.inFleet, State: "connecting", Error: lastErr}
	if len(h) > 0 {
		p.Last = h[len(h)-1]
		p.State = stateOf(p.Last)
		p.Queue = p.Last.Frontier + p.Last.Delayed
		for _, g := range []string{streams.StageFetch, streams.StageParse, streams.StageStore} {
			unread := num(float64(p.Last.Unread[g]))
			if p.Last.Unread[g] < 0 {
				unread = "?"
			}
			p.Stages = append(p.Stages, stageRow{Stage: g, Consumers: num(float64(p.Last.Alive[g])) + " of " + num(float64(p.Last.Consumers[g])),
				Pending: num(float64(p.Last.Pending[g])), Unread: unread})
		}
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// num formats a figure as the page's script does: whole numbers (and any from 100 up)
// rounded with thousands separators, others with one decimal.
func num(v float64) string {
	if v >= 100 || v == math.Trunc(v) {
		n := int64(math.Round(v))
		s := strconv.FormatInt(max(n, -n), 10)
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + "," + s[i:]
		}
		if n < 0 {
			s = "-" + s
		}
		return s
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// statusReply is GET /api/status.
type statusReply struct {
	Crawl   string   `json:"crawl"`
	History []Sample `json:"history"`
	Slowest []Host   `json:"slowest"`
	Failing []Host   `json:"failing"`
	Error   string   `json:"error,omitempty"`
}

func (d *Dashboard) status(w http.ResponseWriter, _ *http.Request) {
	h, slow, failing, lastErr := d.s.snapshot()
	writeJSON(w, http.StatusOK, statusReply{Crawl: d.cfg.Crawl, History: h, Slowest: slow, Failing: failing, Error: lastErr})
}

// deadLetter is one row of GET /api/dead.
type deadLetter struct {
	ID         string `json:"id"`
	Stage      string `json:"stage"`
	Deliveries int    `json:"deliveries"`
	URL        string `json:"url"`
	Error      string `json:"error"`
}

func (d *Dashboard) dead(w http.ResponseWriter, r *http.Request) {
	l, err := streams.ReadLayout(r.Context(), d.cfg.Client, d.cfg.Crawl)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	out := []deadLetter{}
	list, err := inspect.ListDead(r.Context(), d.cfg.Client, l, DefaultDeadList)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	for _, dl := range list {
		dl = dl.Redacted() // no URL's credentials in the answer
		out = append(out, deadLetter{ID: dl.ID, Stage: dl.Stage, Deliveries: dl.Deliveries, URL: dl.PageURL(), Error: dl.Error})
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *Dashboard) retry(w http.ResponseWriter, r *http.Request) {
	// JSON only: a cross-site form cannot send it without the browser asking first.
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "want application/json"})
		return
	}
	var req struct {
		IDs []string `json:"ids"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil || len(req.IDs) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "want {\"ids\": [\"<dead-letter id>\", ...]}"})
		return
	}
	l, err := streams.ReadLayout(r.Context(), d.cfg.Client, d.cfg.Crawl)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	n, err := handlers.RetryDead(r.Context(), d.cfg.Client, l, req.IDs)
	if err != nil {
		writeJSON(w, http.StatusConflict, map[string]any{"requeued": n, "error": err.Error()})
		return
	}
	d.log.Info("dead letters re-queued from the dashboard", zap.Int("count", n), zap.Strings("ids", req.IDs))
	writeJSON(w, http.StatusOK, map[string]int{"requeued": n})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
