package spiders

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

const renderSpider = `name: js
start_urls: [http://127.0.0.1:8080/]
render: auto
page:
  wait: {selector: "#app .product", ms: 100}
  block: [image, font]
follow:
  - allow: ["^/c/"]
    render: true
    page:
      wait: networkidle
      block: [none]
      actions:
        - scroll: {until_idle: true}
        - click: "#more"
        - fill: {selector: "#q", value: "shoes"}
  - allow: ["^/p/"]
  - allow: ["^/a/"]
    render: false
items:
  - type: product
    when: ".product"
    fields: {name: ".product h1"}
`

// TestParseRenderAndPage reads render and page at the top and on follow rules: the
// spider's own, and what each rule puts in the requests it makes.
func TestParseRenderAndPage(t *testing.T) {
	sp, warnings, err := Parse("js.yaml", []byte(renderSpider))
	if err != nil || len(warnings) > 0 {
		t.Fatal(err, warnings)
	}
	if sp.Render != RenderAuto {
		t.Errorf("spider render %q", sp.Render)
	}
	want := &Page{Wait: &Wait{Selector: "#app .product", MS: 100}, Block: []string{"image", "font"}}
	if !reflect.DeepEqual(sp.Page, want) {
		t.Errorf("spider page (-want +got):\n-%+v\n+%+v", want, sp.Page)
	}
	res := &Response{URL: "http://127.0.0.1:8080/", Status: 200, Headers: http.Header{"Content-Type": {"text/html"}},
		Body: []byte(`<a href="/c/shoes">c</a><a href="/p/1">p</a><a href="/a/1">a</a>`), Request: &Request{URL: "http://127.0.0.1:8080/"}}
	var out Output
	if err := sp.Callbacks[DefaultCallback](context.Background(), res, &out); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range out.Requests {
		got[r.URL[len("http://127.0.0.1:8080"):]] = fmt.Sprintf("%s %s %v", r.Render, r.PageType, r.Page != nil)
	}
	wantReqs := map[string]string{
		"/c/shoes": "true  true",       // its own mode: no page type needed
		"/p/1":     " follow[1] false", // the spider's auto: typed by its rule
		"/a/1":     "false  false",
	}
	if !reflect.DeepEqual(got, wantReqs) {
		t.Errorf("requests (-want +got):\n-%v\n+%v", wantReqs, got)
	}
	c := out.Requests[0].Page
	if c.WaitFor() != (Wait{NetworkIdle: true}) || c.Blocked() != nil || len(c.Actions) != 3 ||
		!c.Actions[0].Scroll.UntilIdle || c.Actions[1].Click != "#more" || c.Actions[2].Fill.Value != "shoes" {
		t.Errorf("the /c/ rule's page: %+v", c)
	}
	// The request travels through Redis with its page behaviour.
	b, err := MarshalRequest(out.Requests[0])
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalRequest(b)
	if err != nil || !reflect.DeepEqual(back, out.Requests[0]) {
		t.Errorf("round trip: %v\n%s", err, b)
	}
}

func TestParseRenderErrors(t *testing.T) {
	const head = "name: shop\nstart_urls: [http://example.com/]\n" // lines 1-2
	tests := []struct {
		name, src string
		line      int
		key, msg  string
	}{
		{"render value", head + "render: sometimes\n", 3, "render", `want true, false or auto, got the string "sometimes"`},
		{"render list", head + "render: [true]\n", 3, "render", "want true, false or auto, got a list"},
		{"page not a mapping", head + "page: [1]\n", 3, "page", "want a mapping"},
		{"page unknown key", head + "page:\n  waits: networkidle\n", 4, "page", `unknown key "waits"`},
		{"wait scalar", head + "page:\n  wait: load\n", 4, "page.wait", "want networkidle or a mapping"},
		{"wait unknown key", head + "page:\n  wait: {selektor: x}\n", 4, "page.wait", `unknown key "selektor"`},
		{"wait bad selector", head + "page:\n  wait: {selector: \"div[\"}\n", 4, "page.wait", "invalid selector"},
		{"wait ms too long", head + "page:\n  wait: {ms: 600000}\n", 4, "page.wait", "ms 600000: want 0 to 60000"},
		{"block unknown kind", head + "page:\n  block: [image, video]\n", 4, "page.block[1]", `unknown kind "video"`},
		{"block empty", head + "page:\n  block: []\n", 4, "page.block", "write [none] to block nothing"},
		{"block none and more", head + "page:\n  block: [none, image]\n", 4, "page.block", "stands alone"},
		{"action empty", head + "page:\n  actions:\n    - {}\n", 5, "page.actions[0]", "want one of click, scroll or fill"},
		{"action two steps", head + "page:\n  actions:\n    - {click: a, scroll: {times: 1}}\n", 5, "page.actions[0]", "one step per action"},
		{"action unknown", head + "page:\n  actions:\n    - hover: a\n", 5, "page.actions[0]", `unknown key "hover"`},
		{"scroll times", head + "page:\n  actions:\n    - scroll: {times: 0}\n", 5, "page.actions[0]", "times 0: want 1 to 100"},
		{"scroll both", head + "page:\n  actions:\n    - scroll: {times: 2, until_idle: true}\n", 5, "page.actions[0]", "exclude each other"},
		{"click bad selector", head + "page:\n  actions:\n    - click: \"a[\"\n", 5, "page.actions[0]", "click: invalid selector"},
		{"fill without selector", head + "page:\n  actions:\n    - fill: {value: x}\n", 5, "page.actions[0]", "fill: selector: empty selector"},
		{"rule render", head + "follow:\n  - allow: [a]\n    render: maybe\n", 5, "follow[0].render", "want true, false or auto"},
		{"rule page", head + "follow:\n  - page:\n      block: [gifs]\n", 5, "follow[0].page.block[0]", `unknown kind "gifs"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse("shop.yaml", []byte(tt.src))
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("error %v, want a *SpecError", err)
			}
			prefix := fmt.Sprintf("spiders: shop.yaml:%d: %s", tt.line, tt.key)
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.msg) {
				t.Errorf("error (-want +got):\n-%s...%s...\n+%s", prefix, tt.msg, msg)
			}
		})
	}
}

// TestRenderMode resolves a request's mode: its own, its meta's, the spider's.
func TestRenderMode(t *testing.T) {
	tests := []struct {
		req    Request
		spider Render
		want   Render
		err    bool
	}{
		{Request{}, RenderDefault, RenderOff, false},
		{Request{}, RenderAuto, RenderAuto, false},
		{Request{Meta: map[string]any{"render": true}}, RenderOff, RenderOn, false},
		{Request{Meta: map[string]any{"render": "auto"}}, RenderOn, RenderAuto, false},
		{Request{Meta: map[string]any{"render": false}}, RenderOn, RenderOff, false},
		{Request{Render: RenderOff, Meta: map[string]any{"render": true}}, RenderOn, RenderOff, false},
		{Request{Meta: map[string]any{"render": 1.0}}, RenderOn, "", true},
		{Request{Meta: map[string]any{"render": "yes"}}, RenderOn, "", true},
	}
	for i, tt := range tests {
		got, err := tt.req.RenderMode(tt.spider)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("%d: %q, %v; want %q (error %v)", i, got, err, tt.want, tt.err)
		}
	}
}

// TestRequestValidatesPage rejects a request whose page behaviour is invalid: it
// comes from Redis and becomes a dead letter, never a browser's error.
func TestRequestValidatesPage(t *testing.T) {
	for _, r := range []*Request{
		{URL: "http://x/", Render: "always"},
		{URL: "http://x/", Page: &Page{Actions: []Action{{}}}},
		{URL: "http://x/", Page: &Page{Block: []string{"images"}}},
		{URL: "http://x/", Page: &Page{Wait: &Wait{Selector: ":::"}}},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%+v: valid", r)
		}
	}
	ok := &Request{URL: "http://x/", Render: RenderOn, Page: &Page{Wait: &Wait{NetworkIdle: true}, Block: []string{BlockNone},
		Actions: []Action{{Scroll: &Scroll{Times: 3}}}}}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
}
