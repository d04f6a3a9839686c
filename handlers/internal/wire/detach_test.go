package wire

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// A detached response is what the parse stage would decode from the entry: the same
// fields, an own copy of the body (the fetch stage's buffer is reused at once), the
// same normalisations (headers never nil, an empty body nil).
func TestDetachResponseIsWhatDecodingGives(t *testing.T) {
	t.Parallel()
	req := &spiders.Request{URL: "http://example.com/p/1", Callback: "product", Meta: map[string]any{"k": "v"}, Depth: 2,
		RedirectURLs: []string{"http://example.com/old"}}
	at := time.Now().UTC() // with a monotonic reading, which the wire drops
	for name, in := range map[string]*spiders.Response{
		"html": {Request: req, URL: "http://example.com/p/1?x", Status: 200, Charset: "windows-1252",
			Headers: http.Header{"Content-Type": {"text/html"}, "Etag": {`"a"`}}, Body: []byte("<html><a href=/x>x</a></html>"),
			Truncated: true, FetchedAt: at, RenderedBy: "HeadlessChrome/1"},
		"no headers, empty body": {Request: req, URL: "http://example.com/e", Status: 204, Body: []byte{}, FetchedAt: at},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, c := range []string{CompressFastest, CompressS2, CompressOff} {
				b, err := MarshalWith(in, c, nil)
				if err != nil {
					t.Fatal(err)
				}
				decoded, err := Unmarshal(b)
				if err != nil {
					t.Fatal(err)
				}
				detached := Detach(in)
				if !reflect.DeepEqual(detached, decoded) {
					t.Fatalf("%s: detached\n%+v\nwant (decoded)\n%+v", c, detached, decoded)
				}
			}
			if len(in.Body) > 0 {
				d := Detach(in)
				saved := in.Body[0]
				in.Body[0] = '#' // the fetch stage's buffer, reused
				if d.Body[0] != saved {
					t.Fatal("the detached body shares the fetched buffer")
				}
				in.Body[0] = saved
			}
		})
	}
}

// Size counts the body, the URLs and the headers.
func TestResponseSize(t *testing.T) {
	t.Parallel()
	r := &spiders.Response{Request: &spiders.Request{URL: "http://a/1"}, URL: "http://a/2", Body: make([]byte, 1000),
		Headers: http.Header{"Content-Type": {"text/html"}}}
	want := int64(1000 + len("http://a/2") + len("http://a/1") + len("Content-Type") + len("text/html") + 16 + sizeOverhead)
	if got := Size(r); got != want {
		t.Fatalf("Size = %d, want %d", got, want)
	}
}
