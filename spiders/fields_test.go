package spiders

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders/datasite"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// typedSpider is a YAML spider with the typed fields of the demo shop and of the data
// site.
func typedSpider(t testing.TB) *Spider {
	t.Helper()
	return mustParse(t, "name: typed\nstart_urls: [http://127.0.0.1/]\nitems:\n"+demosite.TypedItemRules+datasite.ItemRules)
}

// getPage fetches url over HTTP as a Response the spider parses.
func getPage(t testing.TB, url string) *Response {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, res.StatusCode, err)
	}
	return &Response{URL: url, Status: res.StatusCode, Headers: res.Header, Body: body}
}

// asJSON returns v as JSON decodes it, the form sinks store and truths are written in.
func asJSON(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// diff returns "" when got (as JSON decodes it) is want, else both as JSON.
func diff(t testing.TB, want, got any) string {
	t.Helper()
	if g := asJSON(t, got); !reflect.DeepEqual(asJSON(t, want), g) {
		w, _ := json.Marshal(want)
		gb, _ := json.Marshal(g)
		return fmt.Sprintf("(-want +got)\n-%s\n+%s", w, gb)
	}
	return ""
}

// The demo shop's product pages, read with typed fields, give the shop's truth: the
// price as a number, the id by a regex on the SKU, lists, and the spec table as rows.
func TestTypedFieldsDemoSite(t *testing.T) {
	sp := typedSpider(t)
	site := demosite.New(200)
	srv := httptest.NewServer(site)
	defer srv.Close()
	want := site.ExpectedTypedItems(srv.URL + "/")
	products := site.Products()
	for i, p := range products[:40] {
		out := runParse(t, sp, getPage(t, srv.URL+p.URL))
		if len(out.Items) != 1 || out.Items[0].Type != "product" {
			t.Fatalf("%s: items %+v, want one product", p.URL, out.Items)
		}
		if d := diff(t, want[i], out.Items[0].Fields); d != "" {
			t.Errorf("%s: %s", p.URL, d)
		}
		if _, ok := out.Items[0].Fields["id"].(int64); !ok {
			t.Errorf("%s: id is %T, want int64", p.URL, out.Items[0].Fields["id"])
		}
	}
	// A page that is no product yields none.
	if out := runParse(t, sp, getPage(t, srv.URL+"/c/kitchen")); len(out.Items) != 0 {
		t.Errorf("category page yielded %+v", out.Items)
	}
}

// The data site's pages give its truth: a JSON-LD product with no selector at all, a
// microdata product, a listing with a price as a number, tags, a regex capture and the
// rows of a table, and the rustdoc page of the issue.
func TestTypedFieldsDataSite(t *testing.T) {
	sp := typedSpider(t)
	srv := httptest.NewServer(datasite.New())
	defer srv.Close()
	want := datasite.Expected(srv.URL + "/")
	got := map[string]map[string]any{}
	for _, path := range []string{datasite.ProductPath, datasite.APIPath, "/"} {
		for _, it := range runParse(t, sp, getPage(t, srv.URL+path)).Items {
			if _, dup := got[it.Type]; dup {
				t.Errorf("two items of type %s", it.Type)
			}
			got[it.Type] = it.Fields
		}
	}
	for typ, w := range want {
		if d := diff(t, w, got[typ]); d != "" {
			t.Errorf("%s: %s", typ, d)
		}
	}
	if len(got) != len(want) {
		t.Errorf("item types %v, want those of %v", reflect.ValueOf(got).MapKeys(), reflect.ValueOf(want).MapKeys())
	}
}

// What a field holds when its selector matches 0, 1 or many elements.
func TestFieldMatches(t *testing.T) {
	sp := mustParse(t, `
name: s
start_urls: [http://example.com/]
items:
  - type: t
    fields:
      none: ".nothing"
      one: "h1"
      many: "li"
      attr_first: "li::attr(data-x)"
      none_all: {css: ".nothing", all: true}
      one_all: {css: "h1", all: true}
      many_all: {css: "li", all: true}
      attr_all: {css: "li::attr(data-x)", all: true}
      empty: "p.empty"
      empty_long: {css: "p.empty"}
      empty_default: {css: "p.empty", default: 0}
      none_default: {css: ".nothing", default: [a, 1, 2.5, true]}
      re_first_only: {css: "li", re: 'two'}
      re_all: {css: "li", all: true, re: 't(\w+)'}
`)
	res := htmlResponse("http://example.com/", `<h1> Title </h1>
<ul><li>one</li><li data-x="2">two</li><li data-x="3">three</li></ul><p class="empty"> </p>`)
	out := runParse(t, sp, res)
	want := map[string]any{
		"one":           "Title",
		"many":          "one", // the first element only
		"one_all":       []any{"Title"},
		"many_all":      []any{"one", "two", "three"},
		"attr_all":      []any{"2", "3"}, // elements without the attribute give nothing
		"empty":         "",              // the short form keeps an empty text, as it always has
		"empty_default": int64(0),
		"none_default":  []any{"a", int64(1), 2.5, true},
		"re_all":        []any{"wo", "hree"},
	}
	wantFields(t, out, want)
}

func TestFieldRowsOfTheRowItself(t *testing.T) {
	sp := mustParse(t, `
name: s
start_urls: [http://example.com/]
items:
  - type: t
    fields:
      rows:
        css: "tr"
        fields:
          id: {css: "::attr(data-id)", type: int}
          text: "::text"
          link: "a::attr(href)"
          cells: {css: td, all: true}
      first: {css: "tr", all: false, fields: {text: "::text"}}
      nested:
        css: ul.outer > li
        fields:
          name: span
          subs: {css: li, fields: {x: "::text"}}
`)
	res := htmlResponse("http://example.com/dir/page", `<table>
<tr data-id="7"><td>a</td><td><a href="x">b</a></td></tr>
<tr data-id="x"><td>c</td></tr>
<tr></tr></table>
<ul class="outer"><li><span>A</span><ul><li>a1</li><li>a2</li></ul></li><li><span>B</span></li></ul>`)
	out := runParse(t, sp, res)
	want := map[string]any{
		"rows": []any{
			// no space is put between elements: "ab"
			map[string]any{"id": int64(7), "text": "ab", "link": "http://example.com/dir/x", "cells": []any{"a", "b"}},
			map[string]any{"text": "c", "cells": []any{"c"}}, // "x" is no int: the row has no id
			// the empty <tr> yields only an empty text: no row
		},
		"first": map[string]any{"text": "ab"},
		"nested": []any{
			map[string]any{"name": "A", "subs": []any{map[string]any{"x": "a1"}, map[string]any{"x": "a2"}}},
			map[string]any{"name": "B"},
		},
	}
	if len(out.Items) != 1 {
		t.Fatalf("items: %+v", out.Items)
	}
	if d := diff(t, want, out.Items[0].Fields); d != "" {
		t.Error(d)
	}
	if _, ok := out.Items[0].Fields["rows"].([]any)[0].(map[string]any)["id"].(int64); !ok {
		t.Errorf("id is not an int64: %#v", out.Items[0].Fields["rows"])
	}
}

func TestFieldShaping(t *testing.T) {
	sp := mustParse(t, `
name: s
start_urls: [http://example.com/]
items:
  - type: t
    fields:
      replaced: {css: ".price", replace: {"EUR": "€", ",-": ",00"}}
      stripped: {css: ".code", strip: "()#"}
      split_join: {css: ".tags", split: ";", join: ", "}
      joined_all: {css: "li", all: true, join: ""}
      text_of_number: {css: ".count", type: int}
      url: {css: "img::attr(data-src)", type: url}
      no_number: {css: ".code", type: number, default: -1}
      usd: {css: ".usd", type: price}
      usd_currency: {css: ".usd", type: currency}
      all_prices: {css: "li", all: true, type: price}
`)
	res := htmlResponse("http://example.com/a/b", `<span class="price">12,- EUR</span>
<span class="code"> (#abc#) </span><span class="tags">x; y;;z </span><span class="count">1,204 reviews</span>
<img data-src="../img/1.png"><span class="usd">$1,299.00</span>
<ul><li>1.299,00 €</li><li>free</li><li>€ 5</li></ul>`)
	out := runParse(t, sp, res)
	want := map[string]any{
		"replaced":       "12,00 €",
		"stripped":       "abc",
		"split_join":     "x, y, z",
		"joined_all":     "1.299,00 €free€ 5",
		"text_of_number": int64(1204),
		"url":            "http://example.com/img/1.png",
		"no_number":      int64(-1),
		"usd":            1299.0,
		"usd_currency":   "$",
		"all_prices":     []any{1299.0, 5.0}, // "free" has no price: left out
	}
	wantFields(t, out, want)
}

func TestFieldStructuredData(t *testing.T) {
	sp := mustParse(t, `
name: s
start_urls: [http://example.com/]
items:
  - type: t
    fields:
      main: {jsonld: Product, path: name}
      all_names: {jsonld: Product, path: name, all: true}
      iri_type: {jsonld: Recipe, path: name}
      second_image: {jsonld: Product, path: "image[1]"}
      single_as_list: {jsonld: Product, path: "brand[0].name"}
      no_such_index: {jsonld: Product, path: "image[5]"}
      whole: {jsonld: Brand}
      null_value: {jsonld: Product, path: color, default: none}
      md_names: {microdata: Person, path: name, all: true}
      md_url: {microdata: Person, path: url}
      md_time: {microdata: Event, path: startDate}
      md_types: {microdata: Event, path: "@type"}
`)
	res := htmlResponse("http://example.com/p/1", `<html><head>
<script type="application/ld+json">[
 {"@type": "WebPage", "mainEntity": {"@type": ["Product", "Thing"], "name": "Outer", "color": null,
   "image": ["a.jpg", "b.jpg"], "brand": {"@type": "Brand", "name": "Acme"},
   "isSimilarTo": {"@type": "Product", "name": "Inner"}}},
 {"@type": "http://schema.org/Recipe", "name": "Soup"}
]</script>
<script type="Application/LD+JSON; charset=utf-8">{"@graph": [{"@type": "schema:Product", "name": "Graph"}]}</script>
</head><body>
<div itemscope itemtype="https://schema.org/Person"><span itemprop="name">Ann</span><a itemprop="url" href="/ann">x</a>
  <div itemprop="knows" itemscope itemtype="https://schema.org/Person"><span itemprop="name">Bob</span></div></div>
<div itemscope itemtype="https://schema.org/Event https://schema.org/Thing"><time itemprop="startDate" datetime="2025-05-01">May 1</time>
  <div itemscope itemtype="https://schema.org/Person"><span itemprop="name">Cy</span></div></div>
</body></html>`)
	out := runParse(t, sp, res)
	want := map[string]any{
		"main":           "Outer",
		"all_names":      []any{"Outer", "Inner", "Graph"},
		"iri_type":       "Soup",
		"second_image":   "b.jpg",
		"single_as_list": "Acme",
		"whole":          map[string]any{"@type": "Brand", "name": "Acme"},
		"null_value":     "none",
		"md_names":       []any{"Ann", "Bob", "Cy"}, // Cy: an item within another, not its property
		"md_url":         "http://example.com/ann",
		"md_time":        "2025-05-01",
		"md_types":       "https://schema.org/Event",
	}
	wantFields(t, out, want)
}

func TestDataPath(t *testing.T) {
	v := asJSON(t, map[string]any{
		"a": []any{map[string]any{"b": 1}, map[string]any{"b": []any{2, 3}}, map[string]any{"c": 4}},
		"s": "x",
	})
	tests := []struct {
		path string
		want []any
	}{
		{"", []any{v}},
		{"a.b", []any{1.0, 2.0, 3.0}},
		{"a[1].b", []any{2.0, 3.0}},
		{"a[1].b[1]", []any{3.0}},
		{"a[9].b", nil},
		{"s[0]", []any{"x"}},
		{"s[1]", nil},
		{"a.c", []any{4.0}},
		{"nothing.here", nil},
		{"[0].s", []any{"x"}},
	}
	for _, tt := range tests {
		p, err := compileDataPath(tt.path)
		if err != nil {
			t.Errorf("compileDataPath(%q): %v", tt.path, err)
			continue
		}
		var got []any
		p.eval(v, func(x any) bool { got = append(got, x); return true })
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %v, want %v", tt.path, got, tt.want)
		}
	}
	for _, bad := range []string{"a..b", ".a", "a.", "a[", "a[x]", "a[-1]", "a]b", "a[1]b", "a.[0]"} {
		if _, err := compileDataPath(bad); err == nil {
			t.Errorf("compileDataPath(%q): no error", bad)
		}
	}
}

func TestFieldErrors(t *testing.T) {
	const head = "name: shop\nstart_urls: [http://example.com/]\nitems:\n  - type: p\n    fields:\n" // lines 1-5
	tests := []struct {
		name string
		src  string
		line int
		key  string
		msg  string
	}{
		{"bad regex", "      price: {css: .p, re: '(['}\n", 6, "items[0].fields.price.re", "invalid regex"},
		{"unknown processor", "      price:\n        css: .p\n        defualt: x\n", 8, "items[0].fields.price", `unknown key "defualt" (did you mean "default"?)`},
		{"unknown processor far from any", "      price: {css: .p, regex: x}\n", 6, "items[0].fields.price", `unknown key "regex"`},
		{"unknown type", "      price: {css: .p, type: dollars}\n", 6, "items[0].fields.price.type", `unknown type "dollars" (want text, int, number, price, currency or url)`},
		{"bad path", "      price:\n        jsonld: Product\n        path: offers..price\n", 8, "items[0].fields.price.path", "invalid path"},
		{"bad path index", "      price: {jsonld: Product, path: \"offers[first]\"}\n", 6, "items[0].fields.price.path", "is not a number"},
		{"no source", "      price: {re: x}\n", 6, "items[0].fields.price", "want one of css, jsonld or microdata"},
		{"two sources", "      price: {css: .p, jsonld: Product}\n", 6, "items[0].fields.price", "give one source"},
		{"path with css", "      price: {css: .p, path: a}\n", 6, "items[0].fields.price.path", "path reads into jsonld or microdata"},
		{"empty jsonld type", "      price: {jsonld: \"\"}\n", 6, "items[0].fields.price.jsonld", "want a schema.org type"},
		{"bad selector", "      price: {css: \".p[\"}\n", 6, "items[0].fields.price.css", "invalid selector"},
		{"empty selector", "      price: {css: \"::text\"}\n", 6, "items[0].fields.price.css", "empty selector"},
		{"all not a bool", "      price: {css: .p, all: yes please}\n", 6, "items[0].fields.price.all", "want true or false"},
		{"empty strip", "      price: {css: .p, strip: \"\"}\n", 6, "items[0].fields.price.strip", "characters to strip"},
		{"empty split", "      price: {css: .p, split: \"\"}\n", 6, "items[0].fields.price.split", "want a separator"},
		{"replace not a mapping", "      price: {css: .p, replace: [a, b]}\n", 6, "items[0].fields.price.replace", "want a mapping"},
		{"default null", "      price: {css: .p, default: null}\n", 6, "items[0].fields.price.default", "want a value"},
		{"field a list", "      price: [a]\n", 6, "items[0].fields.price", "want a string (a selector) or a mapping"},
		{"rows with re", "      v:\n        css: tr\n        re: x\n        fields: {a: td}\n", 9, "items[0].fields.v.fields", "takes css, all and default; not re"},
		{"rows css with text", "      v: {css: \"tr::text\", fields: {a: td}}\n", 6, "items[0].fields.v.css", "no ::text or ::attr()"},
		{"rows from jsonld", "      v: {jsonld: Product, fields: {a: td}}\n", 6, "items[0].fields.v.fields", "fields goes with css"},
		{"jsonld in a row", "      v:\n        css: tr\n        fields:\n          a: {jsonld: Product}\n", 9, "items[0].fields.v.fields.a", "a field of rows reads its row"},
		{"bad row field", "      v:\n        css: tr\n        fields:\n          a: {css: td, type: float}\n", 9, "items[0].fields.v.fields.a.type", `unknown type "float"`},
		{"empty rows", "      v: {css: tr, fields: {}}\n", 6, "items[0].fields.v.fields", "rows need at least one field"},
		{"reserved row field", "      v:\n        css: tr\n        fields: {_a: td}\n", 8, "items[0].fields.v.fields._a", "invalid field name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse("shop.yaml", []byte(head+tt.src))
			se, ok := err.(*SpecError)
			if !ok {
				t.Fatalf("error %v (%T), want a *SpecError", err, err)
			}
			prefix := fmt.Sprintf("spiders: shop.yaml:%d: %s", tt.line, tt.key)
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.msg) {
				t.Errorf("error (-want +got):\n-%s...%s...\n+%s", prefix, tt.msg, msg)
			}
			if se.Line != tt.line {
				t.Errorf("line %d, want %d", se.Line, tt.line)
			}
		})
	}
}

// wantFields fails unless out holds one item whose fields are want.
func wantFields(t *testing.T, out *Output, want map[string]any) {
	t.Helper()
	if len(out.Items) != 1 || !reflect.DeepEqual(out.Items[0].Fields, want) {
		t.Errorf("fields (-want +got):\n-%#v\n+%#v", want, out.Items)
	}
}
