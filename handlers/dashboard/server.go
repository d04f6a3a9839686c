package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"mime"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers"
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
)

// Config configures a dashboard.
type Config struct {
	// Client reaches the crawl's Redis. Required.
	Client redis.UniversalClient
	// Crawl is the crawl shown. Required.
	Crawl string
	// Interval between samples. Default DefaultInterval.
	Interval time.Duration
	// History is how many samples the charts keep. Default DefaultHistory.
	History int
	// Sampler reads the crawl (shared with the process's /metrics, so that both cost
	// one read per interval). Default: one of its own at Interval.
	Sampler *metrics.Sampler
	// Logger; nil means no-op.
	Logger *zap.Logger
}

// Dashboard serves one crawl's dashboard. Run samples the crawl; Handler serves the page
// and its API.
type Dashboard struct {
	cfg Config
	s   *sampler
	log *zap.Logger
}

// New returns a dashboard for cfg.
func New(cfg Config) (*Dashboard, error) {
	if cfg.Client == nil || cfg.Crawl == "" {
		return nil, errors.New("dashboard: needs a redis client and a crawl")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.History <= 0 {
		cfg.History = DefaultHistory
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Sampler == nil {
		cfg.Sampler = metrics.NewSampler(cfg.Client, cfg.Interval)
	}
	return &Dashboard{cfg: cfg, s: &sampler{src: cfg.Sampler, rdb: cfg.Client, crawl: cfg.Crawl, keep: cfg.History}, log: cfg.Logger}, nil
}

// Run samples the crawl at once and then every Interval while the page is being read
// (the last read of its status within a few seconds), until ctx ends, then returns nil.
func (d *Dashboard) Run(ctx context.Context) error { return d.s.run(ctx, d.cfg.Interval) }

// Handler serves the page at /, its assets under /static/, and the API: GET /api/status,
// GET /api/dead, POST /api/dead/retry ({"ids": [...]}, JSON only).
func (d *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(static, "static")
	_ = mime.AddExtensionType(".js", "text/javascript")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(sub)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, sub, "index.html")
	})
	mux.HandleFunc("GET /api/status", d.status)
	mux.HandleFunc("GET /api/dead", d.dead)
	mux.HandleFunc("POST /api/dead/retry", d.retry)
	return mux
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
		var p struct {
			URL string `json:"url"`
		}
		_ = json.Unmarshal([]byte(dl.Fields["payload"]), &p)
		out = append(out, deadLetter{ID: dl.ID, Stage: dl.Stage, Deliveries: dl.Deliveries, URL: p.URL, Error: dl.Error})
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
