package webtest

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// Page is a page of the site as a correct crawl reads it.
type Page struct {
	// Path of the page ("/latin1").
	Path string
	// Name is the text of the page's <h1 class="name">, as UTF-8.
	Name string
	// Charset is the encoding the page is served in (WHATWG name); "" for pages that
	// are not about encodings.
	Charset string
}

// page is how a page is served.
type page struct {
	Page
	enc         encoding.Encoding // nil: UTF-8
	contentType string
	head        string // extra markup in <head> (a <meta> declaring the charset)
	bom         bool
	pad         int    // bytes of ASCII filler before the name
	compress    string // "br" or "zstd"
}

var pages = []page{
	{Page: Page{"/latin1", "café résumé naïve", "windows-1252"}, enc: charmap.ISO8859_1,
		contentType: "text/html; charset=iso-8859-1"},
	{Page: Page{"/accent/acute", "Café", "windows-1252"}, enc: charmap.ISO8859_1,
		contentType: "text/html; charset=ISO-8859-1"},
	{Page: Page{"/accent/grave", "Cafè", "windows-1252"}, enc: charmap.ISO8859_1,
		contentType: "text/html; charset=latin1"},
	{Page: Page{"/cp1252", "“Smart” quotes – 5 € – œuvre", "windows-1252"}, enc: charmap.Windows1252,
		contentType: "text/html; charset=windows-1252"},
	{Page: Page{"/shift_jis", "日本語のページ", "shift_jis"}, enc: japanese.ShiftJIS,
		contentType: "text/html", head: `<meta charset="Shift_JIS">`},
	{Page: Page{"/gbk", "中文网页", "gbk"}, enc: simplifiedchinese.GBK,
		contentType: "text/html; charset=GBK"},
	{Page: Page{"/euc-kr", "한국어 페이지", "euc-kr"}, enc: korean.EUCKR,
		contentType: "text/html", head: `<meta http-equiv="Content-Type" content="text/html; charset=euc-kr">`},
	{Page: Page{"/bom", "Ünïcödé ✓ with a BOM", "utf-8"}, bom: true,
		contentType: "text/html; charset=iso-8859-1"}, // the BOM wins over the header
	{Page: Page{"/undeclared", "déjà vu, undeclared", "windows-1252"}, enc: charmap.Windows1252,
		contentType: "text/html"},
	{Page: Page{"/undeclared/shift_jis", "ひらがなのページ、宣言なし", "shift_jis"}, enc: japanese.ShiftJIS,
		contentType: "text/html"},
	{Page: Page{"/undeclared/gbk", "没有声明的中文网页", "gbk"}, enc: simplifiedchinese.GBK,
		contentType: "text/html"},
	{Page: Page{"/undeclared/euc-kr", "선언 없는 한국어 페이지", "euc-kr"}, enc: korean.EUCKR,
		contentType: "text/html"},
	{Page: Page{"/utf8-late", "naïve UTF-8 after 2 KB of ASCII", "utf-8"},
		contentType: "text/html", pad: 2048},
	{Page: Page{"/brotli", "brötli body", "utf-8"}, contentType: "text/html; charset=utf-8", compress: "br"},
	{Page: Page{"/zstd", "zstd bödy", "utf-8"}, contentType: "text/html; charset=utf-8", compress: "zstd"},
	{Page: Page{"/deep", "found under 10000 elements", ""}, contentType: "text/html; charset=utf-8"},
}

// DeepNesting is how many elements /deep nests its <h1> in.
const DeepNesting = 10000

// BinaryPath is a PNG image served as text/html: not a page, and no retry will make it one.
const BinaryPath = "/binary"

// Site is the test site. Its zero value is not usable: call New.
type Site struct {
	mu    sync.Mutex
	hits  map[string]int
	paths map[string]page
}

// New returns the site.
func New() *Site {
	s := &Site{hits: map[string]int{}, paths: map[string]page{}}
	for _, p := range pages {
		s.paths[p.Path] = p
	}
	return s
}

// Pages returns the pages a crawl from "/" stores, by path.
func (s *Site) Pages() []Page {
	out := make([]Page, 0, len(pages))
	for _, p := range pages {
		out = append(out, p.Page)
	}
	return out
}

// Hits returns how many times each path was requested.
func (s *Site) Hits() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.hits)
}

// ServeHTTP serves the site.
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.mu.Unlock()
	switch r.URL.Path {
	case "/":
		s.index(w)
		return
	case "/robots.txt":
		http.NotFound(w, r)
		return
	case BinaryPath:
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write(pngBytes)
		return
	}
	p, ok := s.paths[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	body, err := p.render()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", p.contentType)
	if p.compress != "" {
		body = compress(p.compress, body)
		w.Header().Set("Content-Encoding", p.compress)
	}
	_, _ = w.Write(body)
}

func (s *Site) index(w http.ResponseWriter) {
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><title>the real web</title></head><body><ul>")
	paths := make([]string, 0, len(s.paths)+1)
	for p := range s.paths {
		paths = append(paths, p)
	}
	paths = append(paths, BinaryPath)
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(&b, `<li><a href="%s">%s</a></li>`, p, p)
	}
	b.WriteString("</ul></body></html>")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// render returns the page's bytes as served (before compression).
func (p page) render() ([]byte, error) {
	var b bytes.Buffer
	if p.bom {
		b.WriteString("\ufeff")
	}
	b.WriteString("<!DOCTYPE html><html><head>" + p.head + "<title>page</title></head><body>")
	if p.pad > 0 {
		b.WriteString("<!--" + strings.Repeat("x", p.pad) + "-->")
	}
	if p.Path == "/deep" {
		b.WriteString(strings.Repeat("<div>", DeepNesting))
	}
	b.WriteString(`<h1 class="name">` + p.Name + `</h1><a href="/">home</a></body></html>`)
	if p.enc == nil {
		return b.Bytes(), nil
	}
	out, err := p.enc.NewEncoder().Bytes(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("webtest: encode %s: %w", p.Path, err)
	}
	return out, nil
}

func compress(enc string, body []byte) []byte {
	var b bytes.Buffer
	switch enc {
	case "br":
		w := brotli.NewWriter(&b)
		_, _ = w.Write(body)
		_ = w.Close()
	case "zstd":
		w, _ := zstd.NewWriter(&b)
		_, _ = w.Write(body)
		_ = w.Close()
	}
	return b.Bytes()
}

// pngBytes is the start of a PNG file: its signature and an IHDR chunk, then noise.
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"),
	bytes.Repeat([]byte{0x00, 0xff, 0x13, 0x37}, 256)...)

// SpiderYAML returns a YAML spider called name that crawls the site at baseURL and
// stores one "page" item per page: {name: the <h1 class="name"> text}, keyed by name,
// so that two pages whose names differ only in an accent are two items.
func SpiderYAML(name, baseURL string) string {
	return fmt.Sprintf(`name: %s
start_urls: [%s/]
allowed_domains: [127.0.0.1]
follow:
  - links: "a[href]"
items:
  - type: page
    when: "h1.name"
    key: [name]
    fields:
      name: "h1.name::text"
settings:
  obey_robots: false
  allow_networks: [127.0.0.1/32]
`, name, strings.TrimSuffix(baseURL, "/"))
}
