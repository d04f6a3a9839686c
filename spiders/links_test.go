package spiders

import (
	"net/http"
	"reflect"
	"testing"
)

func htmlResponse(url, body string) *Response {
	return &Response{
		URL:     url,
		Status:  200,
		Headers: http.Header{"Content-Type": {"text/html; charset=utf-8"}},
		Body:    []byte(body),
	}
}

const linksPage = `<!doctype html><html><head><title>t</title></head><body>
<a href="/a">a</a>
<a href="b?x=1#frag">b</a>
<a href="  /c  ">c with spaces</a>
<a href="/a#other">a again</a>
<a href="javascript:void(0)">js</a>
<a href="mailto:me@example.com">mail</a>
<a href="tel:+123">tel</a>
<a href="data:text/plain,hi">data</a>
<a href="ftp://example.com/f">ftp</a>
<a href="#top">fragment only</a>
<a href="">empty</a>
<a>no href</a>
<a href="http://[::1">malformed</a>
<a href="//other.example/x">protocol relative</a>
<a href="HTTPS://Other.Example/Y">absolute</a>
<a href="/d
/e">newline inside</a>
<img src="/img.png">
<iframe src="/frame" href="/frame-href"></iframe>
</body></html>`

func TestLinks(t *testing.T) {
	res := htmlResponse("http://example.com/dir/page", linksPage)
	tests := []struct {
		selector string
		want     []string
	}{
		{"a", []string{
			"http://example.com/a",
			"http://example.com/dir/b?x=1",
			"http://example.com/c",
			"http://other.example/x",
			"https://other.example/Y", // the host as browsers send it
			"http://example.com/d/e",
		}},
		{"img, iframe", []string{"http://example.com/img.png", "http://example.com/frame-href"}},
		{"p", nil},
		{"a[", nil}, // invalid selector
	}
	for _, tt := range tests {
		got := res.Links(tt.selector)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Links(%q) (-want +got):\n-%q\n+%q", tt.selector, tt.want, got)
		}
	}
}

func TestLinksBaseHref(t *testing.T) {
	res := htmlResponse("http://example.com/dir/page",
		`<html><head><base href="https://cdn.example/root/"></head><body><a href="x">x</a><a href="/y">y</a></body></html>`)
	want := []string{"https://cdn.example/root/x", "https://cdn.example/y"}
	if got := res.Links("a"); !reflect.DeepEqual(got, want) {
		t.Errorf("Links (-want +got):\n-%q\n+%q", want, got)
	}
}

func TestLinksNotHTML(t *testing.T) {
	res := &Response{
		URL:     "http://example.com/data.json",
		Headers: http.Header{"Content-Type": {"application/json"}},
		Body:    []byte(`{"href": "<a href='/x'>x</a>"}`),
	}
	if got := res.Links("a"); got != nil {
		t.Errorf("Links on json = %q, want nil", got)
	}
}
