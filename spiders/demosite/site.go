package demosite

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// Site is a generated shop. It is an http.Handler, safe for concurrent use; its pages
// depend only on the number it was built with, the Host header of the request and, for
// the home page, the peers given to SetPeers.
//
// Its methods ServeHTTP, Requests, TotalRequests, Reset, KindOf, Reachable,
// ReachableKind and SpiderYAML are those of sitekit.Site (documented in
// spiders/internal/sitekit), which every generated site shares. It counts a
// request under its path?query as sent (fragments are never sent). The reachable
// URLs keep their queries as written: they include the tracking-parameter variants of
// product pages, and, with obeyRobots, leave out /private/. SpiderYAML's spider
// stores the items of ItemRules.
type Site struct {
	*base
	cat   *catalog
	slugs map[string]int // category slug -> index
	peers atomic.Pointer[[]peer]

	pageSize atomic.Int64 // SetPageSize's bytes per page, 0 for none
	footLen  int          // about the bytes of the footer, for pad
}

// New returns the site with about pages reachable URLs (at least 10, at most 5,000,000).
// The same pages always gives the same site.
func New(pages int) *Site {
	s := &Site{cat: newCatalog(pages), slugs: map[string]int{}}
	for i, c := range s.cat.cats {
		s.slugs[c.slug] = i
	}
	s.base = sitekit.NewSite(s.newTruth(), requestKey, 32<<10, ItemRules)
	s.footLen = s.footBytes()
	return s
}

// Content types served by the site.
const (
	ctJSON = "application/json"
	ctPNG  = "image/png"
)

// pixel is a valid 1x1 transparent PNG, served for every /img/<id>.png.
var pixel = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// disallowed is the path prefix the site's robots.txt disallows (see sitekit.Crawler).
const disallowed = "/private/"

// homeLink is the text of an error page's link to the home page.
const homeLink = "Back to the shop"

// render appends the answer to path?query to b and returns it with its status and
// content type. It is the single source of every byte the site serves but its
// robots.txt, which sitekit writes from disallowed.
func (s *Site) render(b []byte, origin, path, query string) ([]byte, int, string) {
	p := &page{B: b, Origin: origin}
	switch {
	case path == "/":
		s.home(p)
	case strings.HasPrefix(path, "/p/"):
		id, ok := sitekit.Number(path[len("/p/"):])
		if !ok || id > s.cat.nProducts {
			return notFound(p)
		}
		s.product(p, id) // any query (tracking parameters) serves the same page
	case strings.HasPrefix(path, "/c/"):
		k, ok := s.slugs[path[len("/c/"):]]
		if !ok {
			return notFound(p)
		}
		n := 1
		if query != "" {
			v := sitekit.QueryValue(query, "page")
			if v != "" {
				if n, ok = sitekit.Number(v); !ok || n > s.cat.categoryPages(k) {
					return notFound(p)
				}
			}
		}
		s.category(p, k, n)
	case strings.HasPrefix(path, "/img/") && strings.HasSuffix(path, ".png"):
		id, ok := sitekit.Number(path[len("/img/") : len(path)-len(".png")])
		if !ok || id > s.cat.nProducts {
			return notFound(p)
		}
		return append(p.B, pixel...), http.StatusOK, ctPNG
	case strings.HasPrefix(path, "/flaky/"):
		n, ok := sitekit.Number(path[len("/flaky/"):])
		if !ok || n > min(3, len(s.cat.cats)) {
			return notFound(p)
		}
		return p.Error(http.StatusInternalServerError, homeLink)
	case path == "/private/x":
		s.private(p, "Staff area")
	case path == "/private/offers":
		s.private(p, "Staff offers")
	case path == "/feed.json":
		return s.feed(p), http.StatusOK, ctJSON
	default:
		return notFound(p)
	}
	return p.B, http.StatusOK, sitekit.HTMLType
}

func notFound(p *page) ([]byte, int, string) { return p.Error(http.StatusNotFound, homeLink) }

// feed writes a JSON list of the first 20 products with absolute URLs.
func (s *Site) feed(p *page) []byte {
	p.S(`{"products":[`)
	for id := 1; id <= min(20, s.cat.nProducts); id++ {
		if id > 1 {
			p.S(",")
		}
		p.B = strconv.AppendQuote(append(p.B, `{"url":`...), p.Origin+s.cat.productURLs[id])
		p.B = strconv.AppendQuote(append(p.B, `,"name":`...), s.cat.names[id])
		p.S(`,"price":"`, s.cat.prices[id], `","sku":"`, s.cat.skus[id], `"}`)
	}
	p.S("]}\n")
	return p.B
}

func itoa(n int) string { return strconv.Itoa(n) }
