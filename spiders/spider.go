package spiders

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// Callback parses one response. It yields items and follow-up requests through out and
// returns an error for a page it could not handle (the page is then retried, and after
// the stage's delivery limit it becomes a dead letter with that error).
type Callback func(ctx context.Context, res *Response, out *Output) error

// Output collects what a callback yields.
type Output struct {
	Items    []Item     // items to store
	Requests []*Request // requests to follow (deduped and queued by the frontier)
}

// Yield adds an item.
func (o *Output) Yield(it Item) { o.Items = append(o.Items, it) }

// Follow adds a request.
func (o *Output) Follow(r *Request) {
	if r != nil {
		o.Requests = append(o.Requests, r)
	}
}

// Spider is a crawl: its name, where it starts, what it may visit, how it fetches
// (Settings) and its named callbacks. Callbacks are looked up by name because requests
// travel through Redis; a request with no callback is parsed by "parse".
type Spider struct {
	// Name is the crawl name; it namespaces every Redis key of the crawl.
	Name string
	// StartURLs are seeded as GET requests parsed by "parse".
	StartURLs []string
	// SitemapURLs are sitemaps (XML, gzipped or not; sitemap indexes are followed) or
	// robots.txt files whose Sitemap: lines name them; every page they list is
	// requested and parsed by "parse".
	SitemapURLs []string
	// AllowedDomains restricts requests to these host names and their subdomains (any
	// port); empty allows every host.
	AllowedDomains []string
	// Settings tune the fetcher and the crawl.
	Settings Settings
	// Login, when set, is submitted before the start URLs are fetched.
	Login *Login
	// FollowFilter, when set, is asked about every redirect hop of a request found on a
	// page (depth > 0): false refuses the hop (counted redirect_refused_rules), since the
	// spider would not have followed a link there. YAML spiders set it from their follow
	// rules: a target must pass the allow/deny of at least one rule.
	FollowFilter func(u *url.URL) bool
	// FingerprintFunc, when set, replaces the fingerprint rules (Settings.Fingerprint):
	// it returns r's key for the duplicate filter, requests with equal keys being one
	// page; the key is hashed (SHA-256) into the FingerprintSize bytes the seen set
	// keeps, and an empty key means r is not filtered. Every process of the crawl must
	// set the same function. Request.Fingerprint and FingerprintRules.Fingerprint are
	// there to build on.
	FingerprintFunc func(r *Request) ([]byte, error)
	// Callbacks by name.
	Callbacks map[string]Callback
	// ItemFields names the fields each item type has, by type. YAML spiders set it from
	// their items rules. The parse stage counts, per type, on how many pages each field
	// had a value, and warns about a field that had none on the first pages of its type
	// (Settings.WarnEmptyFieldAfter); fields not listed here are learnt from the items.
	ItemFields map[string][]string
	// Render is how requests that do not say (Request.Render, meta "render") are
	// fetched: RenderOn loads every page in a browser, RenderAuto learns per page type
	// whether it must. Default RenderDefault: plain HTTP.
	Render Render
	// Page is what the browser does on a rendered page whose request has no Page of
	// its own. Default nil: wait for the network to go idle, block images, fonts and
	// media.
	Page *Page
	// Sink is where the store stage writes the crawl's items when its command gives no
	// --out: a JSONL or CSV path or a postgres:// URL, as processors.Open takes it. It
	// is not part of the crawl's definition (Fingerprint): moving the items elsewhere
	// keeps the crawl. Default "": the command's default (<name>.jsonl, or a fleet
	// worker's --out template).
	Sink string
	// Warnings are what the loader noticed in the file that is not an error: deprecated
	// keys, one "FILE:LINE: ..." each (see Parse). A command logs them when it loads
	// the file, handlers.Crawl when it starts; nil for a Go spider.
	Warnings []string

	definition []byte // a YAML spider's document, for Fingerprint; nil for a Go spider
}

// Handle registers fn as the callback called name. Requests name their callback
// (Response.Follow, NewRequest) because they travel through Redis to whichever process
// parses them, so every process must register the same callbacks. Handle panics on an
// empty name or a nil fn, as http.HandleFunc does: both are mistakes in the program.
func (s *Spider) Handle(name string, fn Callback) {
	if name == "" || fn == nil {
		panic(fmt.Sprintf("spiders: Handle(%q) needs a name and a callback", name))
	}
	if s.Callbacks == nil {
		s.Callbacks = map[string]Callback{}
	}
	s.Callbacks[name] = fn
}

// Callback returns the callback called name.
func (s *Spider) Callback(name string) (Callback, error) {
	if name == "" {
		name = DefaultCallback
	}
	fn, ok := s.Callbacks[name]
	if !ok {
		return nil, fmt.Errorf("spiders: spider %q has no callback %q (has %v)", s.Name, name, s.callbackNames())
	}
	return fn, nil
}

// HasCallback reports whether a request naming callback can be parsed by this spider:
// a registered callback, a built-in one (SitemapCallback, RobotsSitemapsCallback), or ""
// for DefaultCallback.
func (s *Spider) HasCallback(name string) bool {
	switch name {
	case SitemapCallback, RobotsSitemapsCallback:
		return true
	case "":
		name = DefaultCallback
	}
	_, ok := s.Callbacks[name]
	return ok
}

func (s *Spider) callbackNames() []string { return slices.Sorted(maps.Keys(s.Callbacks)) }

// Built-in callbacks of the parse stage for sitemap crawling.
const (
	// SitemapCallback parses a sitemap or sitemap index.
	SitemapCallback = "_sitemap"
	// RobotsSitemapsCallback reads the Sitemap: lines of a robots.txt.
	RobotsSitemapsCallback = "_robots_sitemaps"
)

// StartRequests returns the start URLs as requests, and the sitemap URLs as requests for
// the built-in sitemap callbacks.
func (s *Spider) StartRequests() ([]*Request, error) {
	reqs := make([]*Request, 0, len(s.StartURLs)+len(s.SitemapURLs))
	for _, u := range s.StartURLs {
		r, err := NewRequest(u, DefaultCallback)
		if err != nil {
			return nil, fmt.Errorf("spiders: start url: %w", err)
		}
		reqs = append(reqs, r)
	}
	for _, u := range s.SitemapURLs {
		cb := SitemapCallback
		if strings.HasSuffix(strings.SplitN(u, "?", 2)[0], "/robots.txt") {
			cb = RobotsSitemapsCallback
		}
		r, err := NewRequest(u, cb)
		if err != nil {
			return nil, fmt.Errorf("spiders: sitemap url: %w", err)
		}
		reqs = append(reqs, r)
	}
	return reqs, nil
}

// Validate checks that the spider can run.
func (s *Spider) Validate() error {
	if err := ValidateName(s.Name); err != nil {
		return err
	}
	if _, err := s.Callback(DefaultCallback); err != nil {
		return err
	}
	if _, err := s.StartRequests(); err != nil {
		return err
	}
	if s.Login != nil {
		if err := s.Login.Validate(); err != nil {
			return err
		}
	}
	if err := s.Render.Validate(); err != nil {
		return err
	}
	if err := s.Page.Validate(); err != nil {
		return err
	}
	return s.Settings.Validate()
}
