package spiders

import (
	"testing"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

// TestPageTagsAreWhatTheSelectorsFind: the one walk finds the same <base href> and
// <meta http-equiv> elements, in the same order, as the selectors "base[href]" (first)
// and "meta[http-equiv]" that BaseURL and MetaRefresh used: a <base> without href skipped,
// elements in the body and in foreign content (SVG) counted, none on a page without them.
func TestPageTagsAreWhatTheSelectorsFind(t *testing.T) {
	pages := []string{
		`<html><head><title>x</title></head><body><a href="/a">a</a></body></html>`,
		`<html><head><base target="_blank"><base href="/one/"><base href="/two/"></head><body></body></html>`,
		`<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=/a"></head>` +
			`<body><meta http-equiv="Refresh" content="5; url=/b"><div><base href="/late/"></div></body></html>`,
		`<html><body><svg><base href="/svg/"></base><meta http-equiv="refresh" content="1;url=/c"></meta></svg>` +
			`<p><meta http-equiv="content-type" content="text/html"></p></body></html>`,
		benchPage(),
	}
	for i, page := range pages {
		root, err := ParseHTML([]byte(page))
		if err != nil {
			t.Fatal(err)
		}
		doc := goquery.NewDocumentFromNode(root)
		got := findPageTags(root)
		var wantBase *html.Node
		if s := doc.Find("base[href]"); s.Length() > 0 {
			wantBase = s.Nodes[0]
		}
		wantMetas := doc.Find("meta[http-equiv]").Nodes
		if got.base != wantBase {
			t.Errorf("page %d: base %v, want %v", i, got.base, wantBase)
		}
		if len(got.metas) != len(wantMetas) {
			t.Fatalf("page %d: %d metas, want %d", i, len(got.metas), len(wantMetas))
		}
		for j := range wantMetas {
			if got.metas[j] != wantMetas[j] {
				t.Errorf("page %d: meta %d differs", i, j)
			}
		}
	}
}

// TestBaseURLAndRefreshFromOneWalk: a page's <base href> and its refresh, read through the
// walk: the first base with an href resolves the refresh's target.
func TestBaseURLAndRefreshFromOneWalk(t *testing.T) {
	r := &Response{URL: "http://shop.example/dir/page", Status: 200,
		Headers: map[string][]string{"Content-Type": {"text/html"}},
		Body: []byte(`<html><head><base target="x"><base href="http://cdn.example/base/"><base href="/no/">` +
			`<meta http-equiv="content-type" content="text/html"><meta http-equiv="REFRESH" content="2; URL='next?x=1'"></head></html>`)}
	if got := r.BaseURL().String(); got != "http://cdn.example/base/" {
		t.Errorf("BaseURL %q", got)
	}
	target, ok := r.MetaRefresh()
	if !ok || target != "http://cdn.example/base/next?x=1" {
		t.Errorf("MetaRefresh %q, %v", target, ok)
	}
}
