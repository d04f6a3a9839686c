package handlers

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// parser is the parse stage: it runs the spider callback named on a response's request and
// sends the page's new requests and new items through the frontier (dedup + enqueue, one
// script). It returns only after they are in Redis.
type parser struct {
	spider   *spiders.Spider
	scope    *spiders.Scope
	frontier *frontier.Frontier
	rdb      redis.UniversalClient // the frontier's, for the response dictionaries
	layout   streams.Layout
	counters *streams.Counters
	log      *zap.Logger
	limits   *loop.Errors // what exceeds a size limit, logged short at most once a second
	maxLinks int          // the spider's max_links_per_page, its default applied
	fields   *fieldCheck  // per-field counts, empty items dropped, fields that never match
	handoff  *handoff     // responses this process fetched; nil: none
	names    fieldNames   // item field names by hash, for versioned items' _changed
	revisits *revisitor   // nil: the spider has no revisit rules
}

// parserConfig configures the parse stage.
type parserConfig struct {
	Spider   *spiders.Spider
	Frontier *frontier.Frontier
	// Client and Layout are the frontier's Redis and crawl layout, where the response
	// dictionaries are looked up.
	Client redis.UniversalClient
	Layout streams.Layout
	// Counters and Logger may be nil.
	Counters *streams.Counters
	Logger   *zap.Logger
	// Handoff holds the responses this process's fetch stage published (nil: none).
	Handoff *handoff
}

// newParser returns the parse stage.
func newParser(cfg parserConfig) (*parser, error) {
	if cfg.Spider == nil || cfg.Frontier == nil {
		return nil, errors.New("handlers: parse needs a spider and a frontier")
	}
	scope, err := cfg.Spider.Scope()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := cfg.Spider.Settings
	s.SetDefaults()
	return &parser{spider: cfg.Spider, scope: scope, frontier: cfg.Frontier, rdb: cfg.Client, layout: cfg.Layout, counters: cfg.Counters, log: log,
		limits: loop.NewErrors(log, time.Second), maxLinks: s.MaxLinksPerPage, handoff: cfg.Handoff,
		fields: newFieldCheck(cfg.Spider, cfg.Client, cfg.Layout.Global.Meta, cfg.Counters, log)}, nil
}

// handleIn returns the handler of the responses of partition part: the page's items go
// to that partition's items stream, its links to their hosts' partitions.
func (p *parser) handleIn(part int) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error { return p.handle(msg, part) }
}

func (p *parser) handle(msg *message.Message, part int) error {
	res, err := p.response(msg)
	if err != nil {
		return err
	}
	ctx := msg.Context()
	out, err := p.run(ctx, res)
	if err != nil {
		return err
	}
	var digest string
	if p.revisits != nil && res.Status == 200 {
		digest = pageDigest(out, p.spider.Settings.Revisit.Volatile) // before the links are cut
	}
	p.capLinks(res, out)
	if r := p.refresh(res); r != nil {
		out.Requests = append(out.Requests, r)
	}
	cands := p.requests(res, out.Requests)
	items, pend, err := p.items(ctx, res, p.fields.page(ctx, out.Items), part)
	if err != nil {
		return err
	}
	// A parser that slept while another took the page over leaves the output to it
	// (streams.Held); one that slept between this check and the script only writes it
	// twice, which is harmless: its requests are known already, its items' keys too.
	if err := streams.Held(ctx); err != nil {
		return err
	}
	// Requests and items go out in one script; the page is acked after it ran.
	e, err := p.frontier.Emit(ctx, part, cands, items)
	if err != nil {
		// Redis full (or read-only) is not the page's fault: streams.Fail sees the refusal
		// in the chain, and the page is held, not retried as a delivery.
		return fmt.Errorf("handlers: output of %s: %w", spiders.RedactedURL(res.URL), err)
	}
	if err := p.emitVersions(ctx, res, part, pend, &e); err != nil {
		countEmitted(p.counters, e) // the requests are in Redis: counted once, here
		return err
	}
	countEmitted(p.counters, e)
	if res.Status == 200 {
		// After the output: a page whose items did not get out is not scheduled (it
		// comes again, or is a dead letter whose URL a later link or seed brings back).
		if err := p.revisits.parsed(ctx, res.Request, digest, msg.UUID); err != nil {
			return err
		}
	}
	p.count("pages_parsed", 1)
	return nil
}

// response returns the response of msg: the one this process's fetch stage handed off
// under msg's UUID, else the entry decoded.
func (p *parser) response(msg *message.Message) (*spiders.Response, error) {
	if p.handoff != nil {
		if res, ok := p.handoff.take(msg.UUID); ok {
			p.count("responses_handoff_hits", 1)
			return res, nil
		}
		p.count("responses_handoff_misses", 1)
	}
	// Malformed, or larger than the spider's max_body_size (a forged entry): refused
	// before it is expanded, a dead letter at once.
	return decodeResponse(msg.Context(), p.rdb, p.layout.Global, msg.Payload, p.maxBody())
}

// maxBody is the largest body a stored response may decode to: the spider's
// max_body_size, which the fetcher cut it at.
func (p *parser) maxBody() int64 {
	if m := p.spider.Settings.MaxBodySize; m > 0 {
		return m
	}
	return spiders.DefaultMaxBodySize
}

// short cuts s for a log line: what exceeds a limit is never logged whole.
func short(s string) string {
	const n = 120
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("...(%d bytes)", len(s))
}

// errSpiderInput marks a page the built-in callbacks cannot read (a malformed sitemap).
var errSpiderInput = errors.New("unreadable input")

// run calls the callback, turning a panic into an error that carries the panic message.
func (p *parser) run(ctx context.Context, res *spiders.Response) (out *spiders.Output, err error) {
	cb, ok := p.builtin(res.Request.CallbackName())
	if !ok {
		if cb, err = p.spider.Callback(res.Request.CallbackName()); err != nil {
			return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("callback panicked", zap.String("url", spiders.RedactedURL(res.URL)), zap.Any("panic", r),
				zap.ByteString("stack", debug.Stack()))
			out, err = nil, fmt.Errorf("handlers: callback %q panicked on %s: %v", res.Request.CallbackName(), spiders.RedactedURL(res.URL), r)
		}
	}()
	out = &spiders.Output{}
	res.Spider = p.spider // Follow checks callback names against it
	res.MaxLinks = p.maxLinks
	if p.frontier != nil && p.frontier.Spent(ctx) { // a replay has no frontier
		res.MaxLinks = -1 // no new request can be queued: links are not even looked for
	}
	if err := cb(ctx, res, out); errors.Is(err, errSpiderInput) {
		return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err) // a retry cannot fix the page
	} else if err != nil {
		return nil, fmt.Errorf("handlers: callback %q on %s: %w", res.Request.CallbackName(), spiders.RedactedURL(res.URL), err)
	}
	return out, nil
}

// capLinks bounds the requests a page yields: none once the crawl's max_pages is spent
// (they would be refused in Redis after being encoded and sent), at most
// max_links_per_page from a callback of the spider (the sitemap callbacks have their
// own bound). What is left is counted: links_dropped_over_cap, with the links
// Response.Links already left out.
func (p *parser) capLinks(res *spiders.Response, out *spiders.Output) {
	cut := res.LinksCut()
	_, builtin := p.builtin(res.Request.CallbackName())
	switch limit := res.MaxLinks; {
	case limit < 0:
		p.count("dropped_max_pages", int64(len(out.Requests)))
		out.Requests = nil
	case limit > 0 && !builtin && len(out.Requests) > limit:
		cut += len(out.Requests) - limit
		out.Requests = out.Requests[:limit]
	}
	if cut > 0 {
		p.count("links_dropped_over_cap", int64(cut))
		p.limits.Warn("links of a page left out: max_links_per_page", nil, zap.Int("left_out", cut),
			zap.Int("max_links_per_page", res.MaxLinks), zap.String("page", short(spiders.RedactedURL(res.URL))))
	}
}

// refresh returns the request a page's <meta http-equiv="refresh"> sends a browser to
// (spiders.Response.MetaRefresh), followed as a redirect of the page: the page's
// callback, meta, priority and depth, the page in its RedirectURLs, within
// max_redirects; for a page found on another (depth > 0), only where the spider's
// follow rules would go. Nil when there is none to follow.
func (p *parser) refresh(res *spiders.Response) *spiders.Request {
	if res.MaxLinks < 0 {
		return nil
	}
	target, ok := res.MetaRefresh()
	if !ok || res.Request == nil {
		return nil
	}
	s := p.spider.Settings
	if len(res.Request.RedirectURLs) >= s.Redirects() {
		return nil
	}
	if res.Depth() > 0 && p.spider.FollowFilter != nil {
		u, err := url.Parse(target)
		if err != nil || !p.spider.FollowFilter(u) {
			return nil
		}
	}
	next := *res.Request
	next.URL = target
	next.Retries, next.LastError, next.DontFilter = 0, "", false
	next.RedirectURLs = append(append([]string(nil), res.Request.RedirectURLs...), res.URL)
	p.count("meta_refreshes_followed", 1)
	return &next
}

// requests filters the requests by scope and fingerprints them.
func (p *parser) requests(res *spiders.Response, reqs []*spiders.Request) []frontier.Candidate {
	cands := make([]frontier.Candidate, 0, len(reqs))
	local := make(map[[spiders.FingerprintSize]byte]bool, len(reqs))
	known := 0
	maxURL := p.spider.Settings.MaxURLLength
	if maxURL == 0 {
		maxURL = spiders.DefaultMaxURLLength
	}
	for _, r := range reqs {
		// Scope first: a link the spider would not follow anyway is counted by its
		// scope's reason, without a warning about its length.
		if ok, reason := p.scope.Allows(r); !ok {
			p.count("dropped_"+reason, 1)
			continue
		}
		if len(r.URL) > maxURL {
			p.count("dropped_url_too_long", 1)
			p.limits.Warn("link dropped: URL too long", nil, zap.String("url", short(r.URL)),
				zap.Int("length", len(r.URL)), zap.Int("max_url_length", maxURL), zap.String("page", short(spiders.RedactedURL(res.URL))))
			continue
		}
		fp, err := p.spider.RequestFingerprint(r)
		if err != nil {
			p.count("dropped_invalid", 1)
			continue
		}
		if fp != nil {
			sum := [spiders.FingerprintSize]byte(fp)
			if local[sum] {
				continue // the same link twice on one page
			}
			local[sum] = true
			if p.frontier.Known(sum[:]) {
				known++ // seen before, as this process knows: not even encoded
				continue
			}
		}
		if len(r.Meta) == 0 && res.Request != nil {
			r.Meta = spiders.UserMeta(res.Request.Meta) // not the page's revisit state
		}
		c, err := candidateWith(r, fp)
		if err != nil {
			p.count("dropped_invalid", 1)
			continue
		}
		cands = append(cands, c)
	}
	p.count("requests_duplicate", int64(known))
	return cands
}

// items stamps the items with the page and encodes them with their key fingerprints.
// When items are versioned, the keyed items are returned in pend instead, to be
// versioned and emitted after the page's requests (emitVersions).
//
// An item missing a key field (spiders.Item.MissingKey) is not emitted: keyed as it is
// it would be taken for every other one like it. It becomes a dead letter of the items
// stream of partition part (stage parse, error "missing_key: ..."), counted
// items_missing_key.
func (p *parser) items(ctx context.Context, res *spiders.Response, items []spiders.Item, part int) (outs []frontier.ItemOut, pend []pendingItem, err error) {
	outs = make([]frontier.ItemOut, 0, len(items))
	dedup := p.spider.Settings.ItemDedup()
	versioned := p.spider.Settings.ItemVersioned()
	maxItem := p.maxItem()
	for i := range items {
		it := &items[i]
		stamp(it, res)
		payload, err := spiders.MarshalItem(it)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: handlers: item from %s: %w", streams.ErrPoison, spiders.RedactedURL(res.URL), err)
		}
		if len(payload) > maxItem {
			p.count("items_dropped_too_large", 1)
			p.limits.Warn("item dropped: too large", nil, zap.String("type", short(it.Type)), zap.Int("bytes", len(payload)),
				zap.Int("max_item_size", maxItem), zap.String("page", short(spiders.RedactedURL(res.URL))))
			continue
		}
		if lacks := it.MissingKey(); len(lacks) > 0 {
			k := p.layout.Parts[part]
			why := fmt.Sprintf("missing_key: item %q from %s has no value for key field(s) %s", it.Type, it.URL, strings.Join(lacks, ", "))
			if err := inspect.AddDead(ctx, p.rdb, k, k.Items, streams.StageParse, why, payload); err != nil {
				return nil, nil, err // not in Redis: the page comes again
			}
			p.count("items_missing_key", 1)
			p.limits.Warn("item without its key: dead letter", nil, zap.String("type", short(it.Type)),
				zap.Strings("missing", lacks), zap.String("page", short(spiders.RedactedURL(res.URL))))
			continue
		}
		var key []byte
		if dedup {
			sum := sha256.Sum256([]byte(it.Key()))
			key = sum[:16]
		}
		if versioned {
			pend = append(pend, pendingItem{it: it, key: key})
			continue
		}
		outs = append(outs, frontier.ItemOut{Key: key, Payload: payload})
	}
	return outs, pend, nil
}

// maxItem is the spider's max_item_size, its default applied.
func (p *parser) maxItem() int {
	if m := int(p.spider.Settings.MaxItemSize); m > 0 {
		return m
	}
	return spiders.DefaultMaxItemSize
}

func (p *parser) count(field string, n int64) {
	if p.counters != nil {
		p.counters.Add(field, n)
	}
}

// countEmitted adds what an emit did to the crawl's counters.
func countEmitted(c *streams.Counters, e frontier.Emitted) {
	if c == nil {
		return
	}
	c.Add("requests_queued", int64(e.Requests))
	c.Add("requests_duplicate", int64(e.DuplicateRequests))
	c.Add("items_scraped", int64(e.Items))
	c.Add("items_duplicate_dropped", int64(e.DuplicateItems))
	if e.UnchangedItems > 0 {
		c.Add("items_unchanged", int64(e.UnchangedItems))
	}
	c.Add("dropped_max_pages", int64(e.OverLimit))
}
