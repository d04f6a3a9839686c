package spiders

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

// ErrNotHTML is returned by Response.Doc for bodies that are not HTML.
var ErrNotHTML = errors.New("spiders: response body is not html")

// Response is a fetched page as a callback sees it.
type Response struct {
	// Request is the request that was fetched (its Meta and Depth included).
	Request *Request
	// URL is the final URL after redirects.
	URL string
	// Status is the HTTP status code.
	Status int
	// Headers are the response headers.
	Headers http.Header
	// Body is the (decoded, uncompressed) body, cut at the fetcher's size cap. When
	// Charset is set it is UTF-8, whatever encoding the server sent.
	Body []byte
	// Charset is the encoding the page was in before it was decoded to UTF-8
	// ("utf-8", "windows-1252", "shift_jis", ...; see DecodeText). Empty for bodies that
	// are not text, and for responses fetched by builds that did not decode (Doc then
	// decodes the body itself).
	Charset string
	// Truncated is true when the body was cut at the size cap.
	Truncated bool
	// FetchedAt is when the fetch completed.
	FetchedAt time.Time
	// RenderedBy names the browser that rendered the page ("HeadlessChrome/156.0..."):
	// Body is then the page's DOM after its scripts, wait conditions and actions,
	// serialised as HTML in UTF-8, and Status and Headers are the main document's.
	// Empty for a page fetched over plain HTTP.
	RenderedBy string
	// Spider is the spider whose callback parses the response (the parse stage sets
	// it). When set, Follow returns an error for a callback name it has not
	// registered, so a typo fails where it is made rather than when the followed page
	// is parsed.
	Spider *Spider
	// MaxLinks bounds how many links Links, LinksMatching and a YAML spider's follow
	// rules give for this page, all calls together: 0 no bound, negative none at all.
	// The parse stage sets it to max_links_per_page, and to -1 once the crawl's
	// max_pages is spent (no new request could be queued: the links are not even
	// looked for). LinksCut says how many were left.
	MaxLinks int

	linksGiven, linksCut int

	docOnce sync.Once
	doc     *goquery.Document
	docErr  error
	base    *url.URL

	tagsOnce sync.Once
	pageTags pageTags // see tags
}

// ContentType returns the media type of the body ("text/html"), lower-cased, without parameters.
func (r *Response) ContentType() string {
	ct := r.Headers.Get("Content-Type")
	if ct == "" {
		return ""
	}
	// What mime.ParseMediaType gives as the media type, valid parameters or not, without
	// parsing the parameters (a map per call, on every page): the part before the first
	// ';', trimmed and lower-cased.
	mt, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(mt))
}

// IsHTML reports whether the body is HTML: by content type, or by sniffing when there is none.
func (r *Response) IsHTML() bool {
	switch ct := r.ContentType(); ct {
	case "text/html", "application/xhtml+xml":
		return true
	case "":
		return strings.HasPrefix(http.DetectContentType(r.Body), "text/html")
	default:
		return false
	}
}

// Doc returns the goquery document of an HTML body, built once per response.
// It returns ErrNotHTML for other content types.
func (r *Response) Doc() (*goquery.Document, error) {
	r.docOnce.Do(func() {
		if !r.IsHTML() {
			r.docErr = fmt.Errorf("%w (content type %q)", ErrNotHTML, r.ContentType())
			return
		}
		body := r.Body
		if r.Charset == "" {
			if b, _, err := DecodeText(body, r.Headers.Get("Content-Type")); err == nil {
				body = b
			}
		}
		var root *html.Node
		root, r.docErr = ParseHTML(body)
		if r.docErr == nil {
			r.doc = goquery.NewDocumentFromNode(root)
		} else {
			r.docErr = fmt.Errorf("spiders: parse html of %s: %w", r.URL, r.docErr)
		}
	})
	return r.doc, r.docErr
}

// BaseURL returns the URL relative links resolve against: the document's <base href>
// when present, else the final URL.
func (r *Response) BaseURL() *url.URL {
	if r.base != nil {
		return r.base
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		u = &url.URL{}
	}
	if t, ok := r.tags(); ok && t.base != nil {
		href, _ := attrAnyNS(t.base, "href")
		if b, err := u.Parse(strings.TrimSpace(href)); err == nil {
			u = b
		}
	}
	r.base = u
	return u
}

// Resolve returns href as an absolute URL against the page, without its fragment and
// written as browsers send it (WireURL), or an error for a malformed one.
func (r *Response) Resolve(href string) (string, error) {
	href = strings.TrimSpace(href)
	u, err := r.BaseURL().Parse(href)
	if err != nil {
		return "", fmt.Errorf("spiders: malformed link %q on %s: %w", href, r.URL, err)
	}
	return WireURL(u), nil
}

// Follow returns a request for href (resolved against the page) parsed by callback, one
// level deeper than this response, carrying the request's meta (the user's keys:
// UserMeta; the crawler's own stay with their page). It returns an error for
// a malformed href, and for a callback the response's Spider has not registered.
func (r *Response) Follow(href, callback string) (*Request, error) {
	if r.Spider != nil && !r.Spider.HasCallback(callback) {
		return nil, fmt.Errorf("spiders: follow %s: spider %q has no callback %q (has %v)", href, r.Spider.Name, callback, r.Spider.callbackNames())
	}
	abs, err := r.Resolve(href)
	if err != nil {
		return nil, err
	}
	req := r.follow(abs, callback)
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return req, nil
}

// follow is Follow for a link already resolved to an absolute http(s) URL with a host
// and no fragment (as eachLink gives them): it neither resolves nor validates again.
func (r *Response) follow(abs, callback string) *Request {
	req := &Request{URL: abs, Callback: callback, Depth: r.depth() + 1}
	if r.Request != nil {
		// The user's meta only: the crawler's own (a revisit's state) is the page's.
		if meta := UserMeta(r.Request.Meta); len(meta) > 0 {
			req.Meta = make(map[string]any, len(meta))
			for k, v := range meta {
				req.Meta[k] = v
			}
		}
	}
	return req
}

// Meta returns the request's meta value for key, nil when unset.
func (r *Response) Meta(key string) any {
	if r.Request == nil {
		return nil
	}
	return r.Request.Meta[key]
}

// Depth is the depth of the request that produced this response.
func (r *Response) Depth() int { return r.depth() }

func (r *Response) depth() int {
	if r.Request == nil {
		return 0
	}
	return r.Request.Depth
}

// LinksCut returns how many links Links and the follow rules left out of this page
// because of MaxLinks.
func (r *Response) LinksCut() int { return r.linksCut }
