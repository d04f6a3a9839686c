package jssite

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// PerPage is how many products one call of a category's API returns.
const PerPage = 4

// Site is a generated JavaScript shop. It is an http.Handler, safe for concurrent use;
// its pages depend only on the number it was built with.
type Site struct {
	products, categories, guides, brands int
	forbidden                            atomic.Pointer[string]
	counter                              sitekit.Counter
}

// New returns the site with products products (at least 4), products/6 categories
// (at least 2), three times as many guides as products and half as many brands.
func New(products int) *Site {
	products = max(products, 4)
	return &Site{products: products, categories: max(2, products/6), guides: 3 * products, brands: max(1, products/2)}
}

// SetForbidden names the host:port the /status page's script tries to fetch besides
// the metadata address (a server the test watches, which must never be asked).
func (s *Site) SetForbidden(hostPort string) { s.forbidden.Store(&hostPort) }

// Products, Guides, Brands and Categories are the site's sizes.
func (s *Site) Products() int { return s.products }

// Guides is the number of guide pages.
func (s *Site) Guides() int { return s.guides }

// Brands is the number of brand pages.
func (s *Site) Brands() int { return s.brands }

// Categories is the number of category pages.
func (s *Site) Categories() int { return s.categories }

// Requests returns how many requests the site served per path?query as sent.
func (s *Site) Requests() map[string]int { return s.counter.Snapshot() }

// TotalRequests returns the number of requests served since New or the last Reset.
func (s *Site) TotalRequests() int64 { return s.counter.Total() }

// Reset forgets every counted request.
func (s *Site) Reset() { s.counter.Reset() }

// product i (1-based) and what it is made of.
func (s *Site) category(i int) int { return (i-1)%s.categories + 1 }
func (s *Site) guideOf(i int) int  { return (i-1)%s.guides + 1 }
func sku(i int) string             { return fmt.Sprintf("JS-%05d", i) }
func slug(c int) string            { return "cat-" + strconv.Itoa(c) }
func price(i int) string {
	return fmt.Sprintf("%d.%02d", 5+sitekit.Pick(i, 1, 200), sitekit.Pick(i, 2, 100))
}
func name(i int) string {
	return adjectives[sitekit.Pick(i, 3, len(adjectives))] + " " + nouns[sitekit.Pick(i, 4, len(nouns))] + " " + strconv.Itoa(i)
}

var (
	adjectives = []string{"Red", "Quiet", "Swift", "Golden", "Plain", "Bold", "Tiny", "Grand"}
	nouns      = []string{"Lamp", "Chair", "Kettle", "Shoe", "Clock", "Bottle", "Scarf", "Mug"}
)

// inCategory returns the products of category c, in order.
func (s *Site) inCategory(c int) []int {
	var out []int
	for i := c; i <= s.products; i += s.categories {
		out = append(out, i)
	}
	return out
}

// ServeHTTP counts the request and answers it.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.counter.Add(r.URL.RequestURI())
	p := r.URL.Path
	// numbered serves /<prefix><n> with serve(n) when 1 <= n <= limit, else a 404.
	numbered := func(prefix string, limit int, serve func(n int)) {
		if n, ok := sitekit.Number(strings.TrimPrefix(p, prefix)); ok && n <= limit {
			serve(n)
			return
		}
		http.NotFound(w, r)
	}
	switch {
	case p == "/" || p == "/status":
		s.shell(w, p)
	case p == "/app.js":
		w.Header().Set("Content-Type", "text/javascript")
		w.Header().Set("Cache-Control", "max-age=3600")
		fmt.Fprint(w, appJS)
	case p == "/robots.txt":
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "User-agent: *\nDisallow: /private/\n")
	case strings.HasPrefix(p, "/c/"):
		if c, ok := s.categoryOf(p); ok {
			s.categoryPage(w, c)
			return
		}
		http.NotFound(w, r)
	case strings.HasPrefix(p, "/p/"):
		numbered("/p/", s.products, func(int) { s.shell(w, p) })
	case strings.HasPrefix(p, "/go/"):
		numbered("/go/", s.products, func(i int) {
			html(w, fmt.Sprintf(`<!doctype html><html><head><title>moving</title><script>location.replace("/p/%d")</script></head><body></body></html>`, i))
		})
	case strings.HasPrefix(p, "/guide/"):
		numbered("/guide/", s.guides, func(g int) { s.guide(w, g) })
	case strings.HasPrefix(p, "/brand/"):
		numbered("/brand/", s.brands, func(b int) { s.brand(w, b) })
	case strings.HasPrefix(p, "/api/"):
		s.api(w, r)
	case p == "/img.png":
		w.Header().Set("Content-Type", "image/png")
	default:
		http.NotFound(w, r)
	}
}

func (s *Site) categoryOf(p string) (int, bool) {
	c, ok := sitekit.Number(strings.TrimPrefix(p, "/c/cat-"))
	return c, ok && strings.HasPrefix(p, "/c/cat-") && c <= s.categories
}

func html(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", sitekit.HTMLType)
	fmt.Fprint(w, body)
}
