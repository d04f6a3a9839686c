package spiders

import (
	"context"
	"net/http"
	"testing"
)

func TestTextAttrNotHTML(t *testing.T) {
	res := &Response{URL: "https://x.example/a.json", Status: 200,
		Headers: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"h1":"no"}`)}
	if got := res.Text("h1"); got != "" {
		t.Errorf("Text on json = %q, want empty", got)
	}
	if got := res.Attr("a", "href"); got != "" {
		t.Errorf("Attr on json = %q, want empty", got)
	}
	if got := res.Texts("h1"); got != nil {
		t.Errorf("Texts on json = %q, want nil", got)
	}
}

func TestFollowChecksCallback(t *testing.T) {
	sp := &Spider{Name: "s"}
	sp.Handle("parse", func(context.Context, *Response, *Output) error { return nil })
	res := &Response{URL: "https://x.example/", Spider: sp}
	for _, cb := range []string{"", "parse", SitemapCallback, RobotsSitemapsCallback} {
		if _, err := res.Follow("/a", cb); err != nil {
			t.Errorf("Follow(%q): %v", cb, err)
		}
	}
	if _, err := res.Follow("/a", "item"); err == nil {
		t.Error("Follow to an unregistered callback: no error")
	}
	res.Spider = nil // a response made by hand: nothing to check against
	if _, err := res.Follow("/a", "item"); err != nil {
		t.Errorf("Follow without a spider: %v", err)
	}
}

func TestHandlePanicsOnMistakes(t *testing.T) {
	for name, fn := range map[string]Callback{"": func(context.Context, *Response, *Output) error { return nil }, "parse": nil} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Handle(%q, nil=%v) did not panic", name, fn == nil)
				}
			}()
			(&Spider{}).Handle(name, fn)
		}()
	}
}
