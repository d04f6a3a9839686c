package spiders

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

const productPage = `<!doctype html>
<html><head>
<title>  Red
  shoes | Shop </title>
<link rel="canonical" href="/p/red-shoes">
<link rel="next" href="/c/shoes?page=2">
</head><body>
<nav><a href="/">home</a> <a href="/c/shoes">shoes</a> <a href="/p/private/x">private</a></nav>
<div class="product" data-sku=" SKU-1 ">
  <h1 class="product-name">Red
     <b>running</b>   shoes</h1>
  <span class="price"> 12.50 € </span>
  <img class="main" src="img/red.jpg">
  <script>var x = "not text";</script>
</div>
<div class="product" data-sku="SKU-2"><h1 class="product-name">Second</h1></div>
<a href="/p/blue-shoes#reviews">blue</a>
<a href="/p/red-shoes">self</a>
<a href="/c/shoes?page=2">page 2 again</a>
<a href="https://elsewhere.example/p/x">offsite but allowed by path</a>
<a href="mailto:shop@example.com">mail</a>
</body></html>`

func TestLoadFileRun(t *testing.T) {
	sp, warnings, err := LoadFile("testdata/shop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}
	wantSettings := Settings{
		Concurrency:     8,
		UserAgent:       "streamcrawl-test",
		DownloadTimeout: 5 * time.Second,
		ConnectTimeout:  200 * time.Millisecond,
		MaxBodySize:     1 << 20,
		MaxRedirects:    intPtr(3),
		MaxDepth:        4,
		Headers:         map[string]string{"Accept-Language": "en"},
	}
	if !reflect.DeepEqual(sp.Settings, wantSettings) {
		t.Errorf("settings (-want +got):\n-%+v\n+%+v", wantSettings, sp.Settings)
	}
	if sp.Name != "shop" || !reflect.DeepEqual(sp.StartURLs, []string{"http://127.0.0.1:8080/"}) ||
		!reflect.DeepEqual(sp.AllowedDomains, []string{"127.0.0.1"}) {
		t.Errorf("spider = %q %q %q", sp.Name, sp.StartURLs, sp.AllowedDomains)
	}

	res := htmlResponse("http://127.0.0.1:8080/p/red-shoes?ref=home", productPage)
	res.Request = &Request{URL: res.URL, Depth: 1, Meta: map[string]any{"seed": "a"}}
	out := runParse(t, sp, res)

	wantItems := []Item{
		{
			Type: "product",
			Fields: map[string]any{
				"url":   "http://127.0.0.1:8080/p/red-shoes",
				"sku":   "SKU-1",
				"name":  "Red running shoes",
				"price": "12.50 €",
				"image": "http://127.0.0.1:8080/p/img/red.jpg",
			},
			KeyFields: []string{"sku"},
			URL:       res.URL,
		},
		{Type: "page", Fields: map[string]any{"title": "Red shoes | Shop"}, URL: res.URL},
	}
	if !reflect.DeepEqual(out.Items, wantItems) {
		t.Errorf("items (-want +got):\n-%+v\n+%+v", wantItems, out.Items)
	}

	var got []string
	for _, r := range out.Requests {
		got = append(got, fmt.Sprintf("%s depth=%d cb=%s meta=%v", r.URL, r.Depth, r.Callback, r.Meta))
	}
	want := []string{
		"http://127.0.0.1:8080/c/shoes depth=2 cb=parse meta=map[seed:a]",
		"http://127.0.0.1:8080/p/blue-shoes depth=2 cb=parse meta=map[seed:a]",
		"http://127.0.0.1:8080/p/red-shoes depth=2 cb=parse meta=map[seed:a]",
		"http://127.0.0.1:8080/c/shoes?page=2 depth=2 cb=parse meta=map[seed:a]",
		"https://elsewhere.example/p/x depth=2 cb=parse meta=map[seed:a]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requests (-want +got):\n-%s\n+%s", strings.Join(want, "\n-"), strings.Join(got, "\n+"))
	}
}

func runParse(t testing.TB, sp *Spider, res *Response) *Output {
	t.Helper()
	cb, err := sp.Callback("parse")
	if err != nil {
		t.Fatal(err)
	}
	out := &Output{}
	if err := cb(context.Background(), res, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParseWhenDoesNotMatch(t *testing.T) {
	sp := mustParse(t, `
name: s
start_urls: [http://example.com/]
items:
  - type: product
    when: div.product
    fields: {name: h1}
  - type: any
    when: ""
    fields: {name: h1}
`)
	out := runParse(t, sp, htmlResponse("http://example.com/", `<h1>Hi</h1>`))
	want := []Item{{Type: "any", Fields: map[string]any{"name": "Hi"}, URL: "http://example.com/"}}
	if !reflect.DeepEqual(out.Items, want) || len(out.Requests) != 0 {
		t.Errorf("output (-want +got):\n-%+v\n+%+v %v", want, out.Items, out.Requests)
	}
}

func TestParseNotHTML(t *testing.T) {
	sp := mustParse(t, `
name: s
start_urls: [http://example.com/]
follow: [{links: a}]
items: [{type: page, fields: {t: title}}]
`)
	res := &Response{
		URL:     "http://example.com/x.json",
		Headers: http.Header{"Content-Type": {"application/json"}},
		Body:    []byte(`<html><title>x</title><a href="/y">y</a></html>`),
	}
	if out := runParse(t, sp, res); len(out.Items) != 0 || len(out.Requests) != 0 {
		t.Errorf("non-html page yielded %+v", out)
	}
}

func mustParse(t testing.TB, src string) *Spider {
	t.Helper()
	sp, _, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func TestParseWarnings(t *testing.T) {
	src := `name: shop
start_urls: [http://example.com/]
sitemap_urls: [http://example.com/sitemap.xml]
settings:
  concurrency: 4
  obey_robots: true
  allow_private_networks: false
  per_host_concurrency: 2
  per_host_delay: 250ms
  limits:
    - domain: example.com
      concurrency: 1
      delay: 1s
  autothrottle: true
  max_pages: 1000
  dedup: bloom
  capacity: 1000000
  error_rate: 0.001
  order: breadth-first
  revisit: {after: 24h}
  max_retries: -1
`
	sp, warnings, err := Parse("shop.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var want []string // every key of the format is built: no warnings
	sortStrings(want)
	got := append([]string(nil), warnings...)
	sortStrings(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings (-want +got):\n-%s\n+%s", strings.Join(want, "\n-"), strings.Join(got, "\n+"))
	}
	s := sp.Settings
	if s.Concurrency != 4 || s.ObeyRobots == nil || !*s.ObeyRobots || s.PerHostDelay != 250*time.Millisecond ||
		s.MaxRetries == nil || *s.MaxRetries != -1 || s.ErrorRate != 0.001 || s.Dedup != "bloom" ||
		!reflect.DeepEqual(s.Limits, []LimitRule{{Domain: "example.com", Concurrency: 1, Delay: time.Second}}) {
		t.Errorf("settings not decoded: %+v", s)
	}
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	const head = "name: shop\nstart_urls: [http://example.com/]\n" // lines 1-2
	tests := []struct {
		name string
		src  string
		line int
		key  string // the key path, or a fragment of the message for keyless errors
		msg  string
	}{
		{"syntax", "name: shop\nstart_urls: [http://x/\n", 2, "", "invalid yaml"},
		{"tab indent", "name: shop\nsettings:\n\tconcurrency: 1\n", 3, "", "invalid yaml"},
		{"empty file", "", 1, "", "empty file"},
		{"two documents", head + "---\nname: other\n", 3, "", "more than one YAML document"},
		{"not a mapping", "- a\n- b\n", 1, "", "want a mapping, got a list"},
		{"unknown top-level key", "name: shop\nstart_url: [http://example.com/]\n", 2, "", `unknown key "start_url"`},
		{"duplicate key", head + "name: again\n", 3, "", `duplicate key "name"`},
		{"missing name", "start_urls: [http://example.com/]\n", 1, "name", "required key is missing"},
		{"missing start_urls", "name: shop\n", 1, "start_urls", "required key is missing"},
		{"invalid name", "name: -shop\nstart_urls: [http://example.com/]\n", 1, "name", "invalid spider name"},
		{"name wrong type", "name: [a]\nstart_urls: [http://example.com/]\n", 1, "name", "want a string, got a list"},
		{"start_urls wrong type", "name: shop\nstart_urls: http://example.com/\n", 2, "start_urls", "want a list"},
		{"start_urls empty", "name: shop\nstart_urls: []\n", 2, "start_urls", "at least one url"},
		{"invalid start url", "name: shop\nstart_urls:\n  - http://example.com/\n  - ftp://example.com/\n", 4, "start_urls[1]", "not http or https"},
		{"start url without host", "name: shop\nstart_urls: [\"http:///x\"]\n", 2, "start_urls[0]", "no host"},
		{"bad allowed domain", head + "allowed_domains: [\"http://example.com/\"]\n", 3, "allowed_domains[0]", "not a url"},
		{"sitemap_urls wrong type", head + "sitemap_urls: 3\n", 3, "sitemap_urls", "want a list"},
		{"follow not a list", head + "follow:\n  links: a\n", 4, "follow", "want a list"},
		{"unknown follow key", head + "follow:\n  - links: a\n    alow: [x]\n", 5, "follow[0]", `unknown key "alow"`},
		{"invalid follow selector", head + "follow:\n  - links: \"a[\"\n", 4, "follow[0].links", "invalid selector"},
		{"empty follow selector", head + "follow:\n  - links: \"\"\n", 4, "follow[0].links", "empty selector"},
		{"invalid allow regex", head + "follow:\n  - links: a\n    allow:\n      - ok\n      - \"(\"\n", 7, "follow[0].allow[1]", "invalid regex"},
		{"invalid deny regex", head + "follow:\n  - deny: [\"[z-a]\"]\n", 4, "follow[0].deny[0]", "invalid regex"},
		{"allow wrong type", head + "follow:\n  - allow: {a: b}\n", 4, "follow[0].allow", "want a list, got a mapping"},
		{"items not a list", head + "items: product\n", 3, "items", "want a list"},
		{"unknown item key", head + "items:\n  - type: p\n    feilds: {a: b}\n", 5, "items[0]", `unknown key "feilds"`},
		{"missing item type", head + "items:\n  - fields: {a: b}\n", 4, "items[0].type", "required key is missing"},
		{"empty item type", head + "items:\n  - type: \"  \"\n    fields: {a: b}\n", 4, "items[0].type", "empty item type"},
		{"item without fields key", head + "items:\n  - type: p\n", 4, "items[0].fields", "required key is missing"},
		{"item with no fields", head + "items:\n  - type: p\n    fields: {}\n", 5, "items[0].fields", "at least one field"},
		{"invalid field selector", head + "items:\n  - type: p\n    fields:\n      name: h1\n      price: \".price[\"\n", 7, "items[0].fields.price", `invalid selector ".price["`},
		{"invalid field selector with text", head + "items:\n  - type: p\n    fields:\n      price: \".price[::text\"\n", 6, "items[0].fields.price", `invalid selector ".price["`},
		{"empty attr", head + "items:\n  - type: p\n    fields:\n      u: \"a::attr()\"\n", 6, "items[0].fields.u", "empty attribute name"},
		{"field not a string", head + "items:\n  - type: p\n    fields:\n      u: [a]\n", 6, "items[0].fields.u", "want a string"},
		{"reserved field name", head + "items:\n  - type: p\n    fields:\n      _type: h1\n", 6, "items[0].fields._type", "invalid field name"},
		{"invalid when", head + "items:\n  - type: p\n    when: \"div..x\"\n    fields: {a: b}\n", 5, "items[0].when", "invalid selector"},
		{"key not in fields", head + "items:\n  - type: p\n    key: [url, sku]\n    fields: {url: a}\n", 5, "items[0].key[1]", `field "sku" is not in fields`},
		{"bad key_missing", head + "items:\n  - type: p\n    key: [url]\n    key_missing: merge\n    fields: {url: a}\n", 6, "items[0].key_missing", "want dead"},
		{"negative max_crawl_delay", head + "settings:\n  max_crawl_delay: -1s\n", 4, "settings.max_crawl_delay", "negative"},
		{"negative max_links_per_page", head + "settings:\n  max_links_per_page: -1\n", 4, "settings.max_links_per_page", "negative"},
		{"settings not a mapping", head + "settings: [1]\n", 3, "settings", "want a mapping"},
		{"unknown settings key", head + "settings:\n  concurency: 3\n", 4, "settings", `unknown key "concurency"`},
		{"extra settings key", head + "settings:\n  extra: 3\n", 4, "settings", `unknown key "extra"`},
		{"concurrency wrong type", head + "settings:\n  concurrency: lots\n", 4, "settings.concurrency", "want an integer"},
		{"retention unknown stream", head + "settings:\n  retention:\n    bodies: {max_age: 1m}\n", 5, "settings.retention", "unknown stream"},
		{"retention bad size", head + "settings:\n  retention:\n    responses: {max_bytes: 64 parsecs}\n", 5, "settings.retention.responses.max_bytes", "invalid size"},
		{"retention size list", head + "settings:\n  retention:\n    responses: {max_bytes: [1]}\n", 5, "settings.retention.responses.max_bytes", "want a size"},
		{"retention unknown key", head + "settings:\n  retention:\n    responses: {max_len: 3}\n", 5, "settings.retention.responses", `unknown key "max_len"`},
		{"concurrency out of range", head + "settings:\n  user_agent: x\n  concurrency: 20000\n", 5, "settings.concurrency", "out of range"},
		{"negative max_depth", head + "settings:\n  max_depth: -1\n", 4, "settings.max_depth", "negative"},
		{"duration as integer", head + "settings:\n  download_timeout: 30\n", 4, "settings.download_timeout", "want a duration"},
		{"invalid duration", head + "settings:\n  connect_timeout: 5 seconds\n", 4, "settings.connect_timeout", "invalid duration"},
		{"negative duration", head + "settings:\n  connect_timeout: -1s\n", 4, "settings.connect_timeout", "negative"},
		{"size as string", head + "settings:\n  max_body_size: 10MB\n", 4, "settings.max_body_size", "want an integer"},
		{"headers wrong type", head + "settings:\n  headers: [a]\n", 4, "settings.headers", "want a mapping"},
		{"header value wrong type", head + "settings:\n  headers:\n    X-A: {b: c}\n", 5, "settings.headers.X-A", "want a string"},
		{"obey_robots wrong type", head + "settings:\n  obey_robots: sometimes\n", 4, "settings.obey_robots", "want a boolean"},
		{"unknown limits key", head + "settings:\n  limits:\n    - domain: a\n      delai: 1s\n", 6, "settings.limits[0]", `unknown key "delai"`},
		{"limits delay wrong type", head + "settings:\n  limits:\n    - delay: [1]\n", 5, "settings.limits[0].delay", "want a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp, _, err := Parse("shop.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse: no error, got spider %q", sp.Name)
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is %T, want *SpecError", err, err)
			}
			prefix := fmt.Sprintf("spiders: shop.yaml:%d: ", tt.line)
			if tt.key != "" {
				prefix += tt.key
			}
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.msg) {
				t.Errorf("error (-want +got):\n-%s...%s...\n+%s", prefix, tt.msg, msg)
			}
			if se.Line != tt.line || se.Key != tt.key && !strings.HasPrefix(tt.key, se.Key) {
				t.Errorf("SpecError line, key (-want +got):\n-%d %q\n+%d %q", tt.line, tt.key, se.Line, se.Key)
			}
		})
	}
}

func TestSpecErrorFormat(t *testing.T) {
	cause := errors.New("spiders: settings.concurrency 0 out of range")
	tests := []struct {
		err  *SpecError
		want string
	}{
		{&SpecError{File: "a.yaml", Line: 3, Err: errors.New(`unknown key "x"`)}, `spiders: a.yaml:3: unknown key "x"`},
		{&SpecError{File: "a.yaml", Line: 7, Key: "items[0].fields.price", Err: errors.New("bad")}, "spiders: a.yaml:7: items[0].fields.price: bad"},
		{&SpecError{File: "a.yaml", Line: 9, Key: "settings.concurrency", Err: cause}, "spiders: a.yaml:9: settings.concurrency 0 out of range"},
		{&SpecError{File: "a.yaml", Err: errors.New("bad")}, "spiders: a.yaml: bad"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() (-want +got):\n-%s\n+%s", tt.want, got)
		}
	}
	if !errors.Is(tests[2].err, cause) {
		t.Error("SpecError does not unwrap to its cause")
	}
}

func TestLoadFileMissing(t *testing.T) {
	_, _, err := LoadFile("testdata/does-not-exist.yaml")
	if err == nil || !strings.HasPrefix(err.Error(), "spiders: ") || !strings.Contains(err.Error(), "does-not-exist.yaml") {
		t.Errorf("LoadFile error = %v", err)
	}
}

func ExampleParse() {
	src := `
name: shop
start_urls: [http://127.0.0.1:8080/]
follow:
  - links: "a[href]"
    allow: ["^/p/"]
items:
  - type: product
    when: div.product
    fields:
      name: ".product-name::text"
      price: ".price::text"
settings:
  obey_robots: true
`
	sp, warnings, err := Parse("shop.yaml", []byte(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(warnings)

	res := &Response{
		URL:     "http://127.0.0.1:8080/",
		Headers: http.Header{"Content-Type": {"text/html"}},
		Body: []byte(`<div class="product"><h2 class="product-name">Red shoes</h2><span class="price">12</span></div>
<a href="/p/2">next</a><a href="/about">about</a>`),
	}
	parse, _ := sp.Callback("parse")
	var out Output
	_ = parse(context.Background(), res, &out)
	for _, it := range out.Items {
		fmt.Println(it.Type, it.Fields["name"], it.Fields["price"])
	}
	for _, r := range out.Requests {
		fmt.Println(r.URL)
	}
	// Output:
	// []
	// product Red shoes 12
	// http://127.0.0.1:8080/p/2
}

func intPtr(i int) *int { return &i }
