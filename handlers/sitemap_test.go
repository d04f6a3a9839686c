package handlers_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// sitemapSite lists pages only in its sitemaps: robots.txt -> index -> two sitemaps
// (one gzipped) -> /a /b /c.
type sitemapSite struct{ *recSite }

func (s sitemapSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := "http://" + r.Host
	switch r.URL.Path {
	case "/robots.txt":
		s.recSite.ServeHTTP(httpDiscard{}, r) // record the hit
		fmt.Fprintf(w, "User-agent: *\nDisallow:\nSitemap: %s/sitemap_index.xml\n", host)
	case "/sitemap_index.xml":
		s.recSite.ServeHTTP(httpDiscard{}, r)
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprintf(w, `<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<sitemap><loc>%s/sm1.xml</loc></sitemap><sitemap><loc>%s/sm2.xml.gz</loc></sitemap></sitemapindex>`, host, host)
	case "/sm1.xml":
		s.recSite.ServeHTTP(httpDiscard{}, r)
		fmt.Fprintf(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%s/a</loc></url><url><loc> %s/b </loc></url></urlset>`, host, host)
	case "/sm2.xml.gz":
		s.recSite.ServeHTTP(httpDiscard{}, r)
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		fmt.Fprintf(zw, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%s/c</loc></url></urlset>`, host)
		zw.Close()
		w.Header().Set("Content-Type", "application/x-gzip")
		_, _ = w.Write(b.Bytes())
	default:
		s.recSite.ServeHTTP(w, r)
	}
}

type httpDiscard struct{}

func (httpDiscard) Header() http.Header         { return http.Header{} }
func (httpDiscard) Write(b []byte) (int, error) { return len(b), nil }
func (httpDiscard) WriteHeader(int)             {}

func TestSitemapsFromRobotsTxtIndexesAndGzip(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := sitemapSite{&recSite{n: 0}}
	base := serve(t, site)
	sp := politeSpider("sitemaps", base)
	sp.SitemapURLs = []string{base + "/robots.txt"}
	sink := newMemSink()
	runCluster(t, srv, sp, 1, sink, nil)
	for _, p := range []string{"/a", "/b", "/c", "/sitemap_index.xml", "/sm1.xml", "/sm2.xml.gz"} {
		if n := site.count(p); n != 1 {
			t.Errorf("%s requested %d times, want 1", p, n)
		}
	}
	for _, p := range []string{"/a", "/b", "/c"} {
		if _, ok := sink.item(fmt.Sprintf(`["page","%s%s"]`, base, p)); !ok {
			t.Errorf("no item for %s", p)
		}
	}
}
