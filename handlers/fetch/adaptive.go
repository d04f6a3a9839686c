package fetch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wake"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// Adaptive rendering defaults.
const (
	// DefaultAutoSamples is how many pages of a type render: auto fetches both ways
	// before it trusts plain HTTP for the type (one page that differs is enough to
	// decide for the browser).
	DefaultAutoSamples = 5
	// DefaultAutoCheckEvery is how often, once a type goes over HTTP, one of its pages
	// is fetched both ways again (1 in 20): a difference sends the type back to the
	// browser.
	DefaultAutoCheckEvery = 20
	// autoModeTTL is how long a fetch process trusts a decision it read.
	autoModeTTL = time.Second
	// autoSamplesInFlight bounds the pages of one learning type a fetch process fetches
	// both ways at once; its other pages of the type wait for the decision (with 16
	// in flight and no bound, a type was sampled 15 times before its first sample came
	// back).
	autoSamplesInFlight = 2
	// autoMaxWait bounds that wait: after it the page goes to the browser.
	autoMaxWait = 30 * time.Second
)

// Modes render: auto decides per page type.
const (
	autoHTTP    = "http"
	autoBrowser = "browser"
)

// adaptive is render: auto. Per page type (Request.PageTypeName: a YAML spider's
// follow rule, else the callback), the first pages are fetched both ways and parsed
// both ways (Config.Extract): while plain HTTP yields the same items and links as the
// browser, the type is learning; after AutoSamples such pages it goes over HTTP, with
// one page in AutoCheckEvery still fetched both ways; one page that differs sends it to
// the browser for good. The decisions live in Redis (Keys.Render), shared by every
// fetch process; a page fetched both ways publishes the rendered response, and its two
// requests are one turn of its host.
type adaptive struct {
	f          *Fetcher
	rdb        redis.UniversalClient
	key        string
	extract    func(context.Context, *spiders.Response) (*spiders.Output, error)
	samples    int
	checkEvery int

	mu       sync.Mutex
	modes    map[string]cachedMode
	http     map[string]int // pages of a type sent over HTTP by this process, for the checks
	sampling map[string]int // samples of a type in flight in this process
	changed  wake.Signal    // broadcast when a sample ends
}

type cachedMode struct {
	mode string
	at   time.Time
}

func newAdaptive(f *Fetcher, cfg Config) *adaptive {
	a := &adaptive{f: f, rdb: cfg.Client, key: cfg.Layout.Global.Render, extract: cfg.Extract,
		samples: cfg.AutoSamples, checkEvery: cfg.AutoCheckEvery, modes: map[string]cachedMode{}, http: map[string]int{},
		sampling: map[string]int{}}
	if a.samples <= 0 {
		a.samples = DefaultAutoSamples
	}
	if a.checkEvery <= 0 {
		a.checkEvery = DefaultAutoCheckEvery
	}
	return a
}

// tripFor returns the round trip of a render: auto request: HTTP or the browser as
// its type's decision says, or both (a sample, or a check). While the type is
// learning and autoSamplesInFlight of its pages are sampled here, it waits for one of
// them to end (at most autoMaxWait, then the browser). An error is Redis's: the
// request comes again.
func (a *adaptive) tripFor(ctx context.Context, req *spiders.Request) (roundTripper, error) {
	typ := req.PageTypeName()
	deadline := time.Now().Add(autoMaxWait)
	for {
		mode, err := a.mode(ctx, typ)
		if err != nil {
			return nil, fmt.Errorf("fetch: render decision for %q: %w", typ, err)
		}
		if mode != "" {
			return a.decided(typ, mode), nil
		}
		a.mu.Lock()
		if a.sampling[typ] < autoSamplesInFlight {
			a.sampling[typ]++
			a.mu.Unlock()
			return autoSample{a: a, typ: typ}, nil
		}
		if time.Now().After(deadline) {
			a.mu.Unlock()
			a.f.count("render_auto_browser", 1)
			return a.f.browser, nil
		}
		a.f.count("render_auto_waits", 1)
		wait, cancel := context.WithDeadline(ctx, deadline)
		_ = a.changed.Wait(wait, &a.mu) // woken, or the deadline: look again
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// sampled ends a sample of typ in this process.
func (a *adaptive) sampled(typ string) {
	a.mu.Lock()
	a.sampling[typ]--
	a.changed.Broadcast()
	a.mu.Unlock()
}

// decided returns the round trip of a page whose type has a decision.
func (a *adaptive) decided(typ, mode string) roundTripper {
	switch mode {
	case autoBrowser:
		a.f.count("render_auto_browser", 1)
		return a.f.browser
	case autoHTTP:
		a.mu.Lock()
		a.http[typ]++
		check := a.http[typ]%a.checkEvery == 0
		a.mu.Unlock()
		if check {
			return autoSample{a: a, typ: typ, check: true}
		}
		a.f.count("render_auto_http", 1)
		return a.f.trip
	}
	a.f.count("render_auto_browser", 1)
	return a.f.browser // a mode this build does not know
}

// mode returns typ's decision ("" while learning), from this process's cache when it
// is fresh.
func (a *adaptive) mode(ctx context.Context, typ string) (string, error) {
	a.mu.Lock()
	c, ok := a.modes[typ]
	a.mu.Unlock()
	if ok && (c.mode == autoBrowser || time.Since(c.at) < autoModeTTL) {
		return c.mode, nil // a browser decision is final
	}
	m, err := a.rdb.HGet(ctx, a.key, typ+"|mode").Result()
	if err != nil && err != redis.Nil {
		return "", err
	}
	a.remember(typ, m)
	return m, nil
}

func (a *adaptive) remember(typ, mode string) {
	a.mu.Lock()
	a.modes[typ] = cachedMode{mode: mode, at: time.Now()}
	a.mu.Unlock()
}

// recordScript records one page of a type fetched both ways and decides.
//
// KEYS[1] -> the crawl's render hash (streams.Keys.Render)
// ARGV[1] -> the page type
// ARGV[2] -> "1" when plain HTTP gave the same items and links as the browser, else "0"
// ARGV[3] -> pages fetched both ways before a type whose pages all agreed goes over HTTP
// ARGV[4] -> "1" for a check of a type that goes over HTTP, else "0" (a sample)
// Output: the type's mode after this page: "", "http" or "browser"
var recordScript = redis.NewScript(`
local t = ARGV[1]
local mode = redis.call('HGET', KEYS[1], t .. '|mode') or ''
if ARGV[4] == '1' then
  redis.call('HINCRBY', KEYS[1], t .. '|checks', 1)
  if ARGV[2] == '0' then
    redis.call('HINCRBY', KEYS[1], t .. '|diverged', 1)
    redis.call('HSET', KEYS[1], t .. '|mode', 'browser')
    return 'browser'
  end
  return mode
end
local n = redis.call('HINCRBY', KEYS[1], t .. '|samples', 1)
local same = tonumber(redis.call('HGET', KEYS[1], t .. '|same') or '0')
if ARGV[2] == '1' then
  same = redis.call('HINCRBY', KEYS[1], t .. '|same', 1)
end
if mode ~= '' then
  return mode
end
if ARGV[2] == '0' then
  redis.call('HSET', KEYS[1], t .. '|mode', 'browser')
  return 'browser'
end
if n >= tonumber(ARGV[3]) and same >= n then
  redis.call('HSET', KEYS[1], t .. '|mode', 'http')
  return 'http'
end
return ''
`)

// record stores a page fetched both ways and remembers the decision it leads to.
func (a *adaptive) record(ctx context.Context, typ string, same, check bool) {
	args := []any{typ, boolArg(same), a.samples, boolArg(check)}
	mode, err := recordScript.Run(context.WithoutCancel(ctx), a.rdb, []string{a.key}, args...).Text()
	if err != nil {
		a.f.log.Warn("render: auto: sample not recorded", zap.String("page_type", typ), zap.Error(err))
		return
	}
	a.remember(typ, mode)
	if mode != "" {
		a.f.log.Debug("render: auto", zap.String("page_type", typ), zap.String("mode", mode), zap.Bool("same", same))
	}
}

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// autoSample fetches a page both ways (plain HTTP first, then the browser), compares
// what the spider gets from each, records it, and passes the rendered page on.
type autoSample struct {
	a     *adaptive
	typ   string
	check bool
}

func (s autoSample) roundTrip(ctx context.Context, req *spiders.Request) (*spiders.Response, *bodyTicket, string, error) {
	a := s.a
	if !s.check {
		defer a.sampled(s.typ) // after the decision is recorded
	}
	hres, hbody, _, herr := a.f.trip.roundTrip(ctx, req)
	defer hbody.release()
	if unsent(herr) {
		return nil, nil, "", herr
	}
	res, body, reason, err := a.f.browser.roundTrip(ctx, req)
	if err != nil || res == nil {
		return res, body, reason, err // the page is retried or dropped as the browser says; nothing learned
	}
	same := herr == nil && hres != nil && a.same(ctx, hres, res)
	if s.check {
		a.f.count("render_auto_checks", 1)
		if !same {
			a.f.count("render_auto_diverged", 1)
			a.f.log.Info("render: auto: a page fetched over HTTP differs from its rendering; its type goes back to the browser",
				zap.String("page_type", s.typ), zap.String("url", req.URL))
		}
	} else {
		a.f.count("render_auto_samples", 1)
	}
	a.record(ctx, s.typ, same, s.check)
	return res, body, "", nil
}

// same reports whether the spider gets the same items (type and fields) and links
// from the page fetched over HTTP as from its rendering.
func (a *adaptive) same(ctx context.Context, plain, rendered *spiders.Response) bool {
	if a.extract == nil {
		return false
	}
	po, err := a.extract(ctx, plain)
	if err != nil {
		return false
	}
	ro, err := a.extract(ctx, rendered)
	if err != nil {
		return false
	}
	return slices.Equal(outputKeys(po), outputKeys(ro))
}

// outputKeys lists what an output yields, sorted: each item as its type and fields,
// each request as its URL.
func outputKeys(o *spiders.Output) []string {
	out := make([]string, 0, len(o.Items)+len(o.Requests))
	for _, it := range o.Items {
		b, _ := json.Marshal(it.Fields) // sorted keys
		out = append(out, "item "+it.Type+" "+string(b))
	}
	for _, r := range o.Requests {
		out = append(out, "link "+r.URL)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
