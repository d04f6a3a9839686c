package handlers_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// gz gzips b.
func gz(b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return out.Bytes()
}

// raw answers with the bytes given, as they are, on the request's connection.
func raw(w http.ResponseWriter, answer string) {
	c, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	defer c.Close()
	_, _ = buf.WriteString(answer)
	_ = buf.Flush()
}

// TestProtocolOddities: a body gzipped twice ("gzip, gzip") is decoded and parsed; a
// meta refresh and a link inside <noscript> are followed; what no retry can change is
// asked once, not four times: a body whose gzip is broken, two Content-Length headers
// that disagree and response headers over 1 MiB are dead letters at once, a Location
// no parser reads is a counted drop; an unsolicited 101 is dropped, not stored as a
// page.
func TestProtocolOddities(t *testing.T) {
	srv := streamstest.Start(t)
	home := `<html><head><meta http-equiv="refresh" content="0; URL='/landing'"></head><body>
<noscript><a href="/nojs">no script</a></noscript>
<a href="/gz2">x</a><a href="/badgz">x</a><a href="/badloc">x</a><a href="/dupcl">x</a><a href="/bighdr">x</a><a href="/101">x</a>
</body></html>`
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, home)
		case "/gz2":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "gzip, gzip")
			_, _ = w.Write(gz(gz([]byte("<html><body><h1>twice</h1></body></html>"))))
		case "/badgz":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write([]byte("this is not gzip at all"))
		case "/badloc":
			w.Header().Set("Location", "http://[::1")
			w.WriteHeader(http.StatusFound)
		case "/dupcl":
			raw(w, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!")
		case "/bighdr":
			for i := range 32 {
				w.Header().Set(fmt.Sprintf("X-Big-%d", i), strings.Repeat("x", 64<<10))
			}
			page(w, "big headers")
		case "/101":
			raw(w, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nstream of bytes")
		default:
			page(w, r.URL.Path)
		}
	}))
	base := serve(t, site)
	sp := titleSpider("oddities", base)
	sp.StartURLs = []string{base + "/"}
	sp.Settings.ObeyRobots = new(bool)
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]int{"/landing": 1, "/nojs": 1, "/gz2": 1, "/badgz": 1, "/badloc": 1, "/dupcl": 1, "/bighdr": 1, "/101": 1} {
		if n := site.count(p); n != want {
			t.Errorf("%s asked %d times, want %d", p, n, want)
		}
	}
	if it, ok := sink.item(fmt.Sprintf(`["page","%s/gz2"]`, base)); !ok || it.Fields["title"] != "twice" {
		t.Errorf("the twice-gzipped page was not stored as its text: %v", it.Fields)
	}
	if _, ok := sink.item(fmt.Sprintf(`["page","%s/101"]`, base)); ok {
		t.Errorf("the 101 answer was stored as a page")
	}
	st, err := inspect.ReadStatus(ctx, srv.Client(), streams.NewLayout("oddities", 1))
	if err != nil {
		t.Fatal(err)
	}
	for counter, want := range map[string]int64{"redirect_location_invalid": 1, "unsolicited_upgrades": 1,
		"retries_scheduled": 0, "meta_refreshes_followed": 1} {
		if st.Stats[counter] != want {
			t.Errorf("%s = %d, want %d", counter, st.Stats[counter], want)
		}
	}
	if st.DeadLetters != 3 {
		t.Errorf("%d dead letters, want 3 (broken gzip, two Content-Lengths, big headers)", st.DeadLetters)
	}
}
