package spiders

import (
	"net/http"
	"testing"
)

// TestRedactText: the user info of every URL in a text goes, the rest stays; text
// without URLs, and URLs without user info, are unchanged.
func TestRedactText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"fetch: http://u:S3cret@127.0.0.1:8080/p?a=b: EOF":                        "fetch: http://127.0.0.1:8080/p?a=b: EOF",
		`{"url":"https://u:p%40ss@shop.example/x","proxy":"socks5://x:Y@p:1080"}`: `{"url":"https://shop.example/x","proxy":"socks5://p:1080"}`,
		"proxyconnect http://:tok@proxy:3128: refused":                            "proxyconnect http://proxy:3128: refused",
		"mail me at a@b.example, see http://host/p?x=a@b":                         "mail me at a@b.example, see http://host/p?x=a@b",
		"no urls here":        "no urls here",
		"http://host/path@v2": "http://host/path@v2",
	} {
		if got := RedactText(in); got != want {
			t.Errorf("RedactText(%q) = %q, want %q", in, got, want)
		}
		if got := string(RedactBytes([]byte(in))); got != want {
			t.Errorf("RedactBytes(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRedactHeader: Authorization and Proxy-Authorization keep their names and
// lose their values; the header given is not changed.
func TestRedactHeader(t *testing.T) {
	t.Parallel()
	h := http.Header{"Authorization": {"Basic dTpTM2NyZXQ="}, "Proxy-Authorization": {"Basic eDpZ"}, "Accept": {"*/*"}}
	got := RedactHeader(h)
	if got.Get("Authorization") != "***" || got.Get("Proxy-Authorization") != "***" || got.Get("Accept") != "*/*" {
		t.Errorf("RedactHeader = %v", got)
	}
	if h.Get("Authorization") != "Basic dTpTM2NyZXQ=" {
		t.Errorf("RedactHeader changed its argument: %v", h)
	}
}

// TestItemRecordMetaWithoutCredentials: a request's proxy meta reaches the item's _meta
// without the proxy's credentials; the item's own meta is not changed.
func TestItemRecordMetaWithoutCredentials(t *testing.T) {
	t.Parallel()
	it := NewItem("page", map[string]any{"title": "t"})
	it.Meta = map[string]any{"proxy": "http://px:S3cret@127.0.0.1:3128", "n": 1.0}
	meta, _ := it.Record()["_meta"].(map[string]any)
	if meta["proxy"] != "http://127.0.0.1:3128" || meta["n"] != 1.0 {
		t.Errorf("_meta = %v, want the proxy without its credentials and n kept", meta)
	}
	if it.Meta["proxy"] != "http://px:S3cret@127.0.0.1:3128" {
		t.Errorf("Record changed the item's meta: %v", it.Meta)
	}
}
