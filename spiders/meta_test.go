package spiders

import (
	"context"
	"reflect"
	"testing"
)

// The crawler's own meta keys (a revisit's "_revisit" state) stay with their request:
// an item's record leaves them out, and a followed link does not inherit them; the
// user's keys go on as before.
func TestCrawlersOwnMetaStaysWithItsRequest(t *testing.T) {
	user := map[string]any{"campaign": "spring", "cookiejar": 2.0}
	revisited := map[string]any{"campaign": "spring", "cookiejar": 2.0, "_revisit": "60000:ec89898e7e9749d1:2e74"}
	for _, tt := range []struct {
		meta, want map[string]any
	}{
		{nil, nil},
		{map[string]any{"_revisit": "x"}, nil},
		{user, user},
		{revisited, user},
	} {
		if got := UserMeta(tt.meta); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("UserMeta(%v) = %v, want %v", tt.meta, got, tt.want)
		}
	}
	if len(revisited) != 3 {
		t.Errorf("UserMeta changed its argument: %v", revisited)
	}

	sp := &Spider{Name: "meta"}
	sp.Handle("parse", func(context.Context, *Response, *Output) error { return nil })
	res := &Response{URL: "https://shop.example/", Spider: sp, Request: &Request{URL: "https://shop.example/", Meta: revisited}}
	req, err := res.Follow("/p/1", "parse")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(req.Meta, user) {
		t.Errorf("followed link's meta %v, want %v", req.Meta, user)
	}
	it := NewItem("product", map[string]any{"url": "https://shop.example/p/1"})
	it.Meta = revisited
	if got := it.Record()["_meta"]; !reflect.DeepEqual(got, user) {
		t.Errorf("record's _meta %v, want %v", got, user)
	}
	it.Meta = map[string]any{"_revisit": "x"}
	if got, ok := it.Record()["_meta"]; ok {
		t.Errorf("record of an item with the crawler's meta only has _meta %v, want none", got)
	}
}
