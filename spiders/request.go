package spiders

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// RequestVersion is the version of the request wire format written by this build.
const RequestVersion = 1

// DefaultCallback is the callback a request without one is parsed with.
const DefaultCallback = "parse"

// Request is a page to fetch. Requests travel through Redis as versioned JSON, so
// everything a callback needs later (its name, meta) is data, never a function.
type Request struct {
	// URL is absolute, http or https.
	URL string `json:"url"`
	// Method defaults to GET.
	Method string `json:"method,omitempty"`
	// Headers are sent with the request in addition to the spider's defaults.
	Headers map[string]string `json:"headers,omitempty"`
	// Body is sent with POST and similar methods; it is part of the fingerprint.
	Body []byte `json:"body,omitempty"`
	// Callback names the spider callback that parses the response; empty means "parse".
	Callback string `json:"callback,omitempty"`
	// Meta is carried to the response and into the callback unchanged.
	Meta map[string]any `json:"meta,omitempty"`
	// Priority orders requests in the frontier: higher first.
	Priority int `json:"priority,omitempty"`
	// Depth is the number of links followed from a start request (start requests are 0).
	Depth int `json:"depth,omitempty"`
	// DontFilter skips the duplicate filter: the request is queued even when the crawl
	// has seen its fingerprint, and is not recorded as seen (retries and revisits use
	// it; so can a callback, for a page it must fetch again, and a JSON seed,
	// "dont_filter": true).
	DontFilter bool `json:"dont_filter,omitempty"`
	// Retries is how many times the fetch has been retried after a failure.
	Retries int `json:"retries,omitempty"`
	// LastError is the failure that caused the latest retry.
	LastError string `json:"last_error,omitempty"`
	// RedirectURLs are the URLs whose redirects led to this request, the first one
	// first (Scrapy's redirect_urls): a 3xx answer becomes a new request for its
	// Location that goes through the frontier like a link, and Response.Request of the
	// page it ends at carries them. max_redirects bounds their number.
	RedirectURLs []string `json:"redirect_urls,omitempty"`
	// SitemapLevel is how deep in sitemap indexes a sitemap request was found: 0 for one
	// the spider or a robots.txt names, 1 for a sitemap an index lists. The protocol
	// allows one level of index: an index found at level 1 is not followed.
	SitemapLevel int `json:"sitemap_level,omitempty"`
	// Render says whether the page is loaded in a browser before it is parsed;
	// RenderDefault leaves it to the meta "render", then to the spider's Render.
	Render Render `json:"render,omitempty"`
	// Page is what the browser does on the page when it is rendered; nil: the
	// spider's Page, else the defaults (wait for the network to go idle, block
	// images, fonts and media).
	Page *Page `json:"page,omitempty"`
	// PageType names the kind of page for Render RenderAuto, which learns per type
	// whether plain HTTP is enough; empty: the callback name.
	PageType string `json:"page_type,omitempty"`
}

// requestWire is the versioned envelope of a Request on a stream.
type requestWire struct {
	V int `json:"v"`
	*Request
}

// NewRequest returns a GET request for rawURL parsed by callback ("" means "parse").
func NewRequest(rawURL, callback string) (*Request, error) {
	r := &Request{URL: rawURL, Callback: callback}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

// Validate reports whether the request can be fetched: an absolute http(s) URL with a host.
func (r *Request) Validate() error {
	if r == nil {
		return errors.New("spiders: nil request")
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return fmt.Errorf("spiders: malformed url %q: %w", r.URL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("spiders: url %q: scheme %q is not http or https", r.URL, u.Scheme)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("spiders: url %q has no host", r.URL)
	}
	if r.Method != "" && strings.ContainsAny(r.Method, " \t\r\n") {
		return fmt.Errorf("spiders: invalid method %q", r.Method)
	}
	if err := r.Render.Validate(); err != nil {
		return err
	}
	if err := r.Page.Validate(); err != nil {
		return err
	}
	return ValidateHeaders("request "+r.URL, r.Headers)
}

// HTTPMethod returns the request method, GET when unset.
func (r *Request) HTTPMethod() string {
	if r.Method == "" {
		return http.MethodGet
	}
	return strings.ToUpper(r.Method)
}

// CallbackName returns the callback name, "parse" when unset.
func (r *Request) CallbackName() string {
	if r.Callback == "" {
		return DefaultCallback
	}
	return r.Callback
}

// Plain reports whether r has no field besides its URL, callback, priority and depth:
// the frontier keeps such a request in a compact form of a few bytes beside its path
// (most requests a crawl finds are plain). A field added to Request must be checked
// here (TestPlainCoversEveryField fails until it is).
func (r *Request) Plain() bool {
	return r.Method == "" && len(r.Headers) == 0 && len(r.Body) == 0 && len(r.Meta) == 0 && !r.DontFilter &&
		r.Retries == 0 && r.LastError == "" && r.Render == RenderDefault && r.Page == nil && r.PageType == "" &&
		len(r.RedirectURLs) == 0 && r.SitemapLevel == 0
}

// Fingerprint identifies the request for duplicate filtering: method, canonical URL and body.
func (r *Request) Fingerprint() ([FingerprintSize]byte, error) {
	return Fingerprint(r.HTTPMethod(), r.URL, r.Body)
}

// MarshalRequest encodes r in the versioned wire format.
func MarshalRequest(r *Request) ([]byte, error) {
	return json.Marshal(requestWire{V: RequestVersion, Request: r})
}

// UnmarshalRequest decodes a request written by MarshalRequest. Unknown versions and
// requests without a valid URL are errors.
func UnmarshalRequest(b []byte) (*Request, error) {
	w := requestWire{Request: &Request{}}
	if err := decodeVersioned(b, &w, &w.V, RequestVersion, "request"); err != nil {
		return nil, err
	}
	if err := w.Request.Validate(); err != nil {
		return nil, err
	}
	return w.Request, nil
}

// decodeVersioned decodes the JSON b into w, a wire struct whose version field the
// decode sets in v, and checks that the version is want; what names the kind of value
// ("item", "request") in errors.
func decodeVersioned(b []byte, w any, v *int, want int, what string) error {
	if err := json.Unmarshal(b, w); err != nil {
		return fmt.Errorf("spiders: decode %s: %w", what, err)
	}
	if *v != want {
		return fmt.Errorf("spiders: %s version %d not supported (want %d)", what, *v, want)
	}
	return nil
}
