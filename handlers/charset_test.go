package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/webtest"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestRealWebPagesAreReadAsBrowsersReadThem crawls pages in latin1, windows-1252,
// Shift_JIS (declared in a <meta> only), GBK, EUC-KR, with a BOM, undeclared, deeply
// nested and compressed with br and zstd: every item holds the page's text as UTF-8,
// the two names that differ only in an accent are two items, and the PNG served as
// text/html is fetched once, counted and never retried.
func TestRealWebPagesAreReadAsBrowsersReadThem(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	site := webtest.New()
	base := serve(t, site)
	sp, _, err := spiders.Parse("realweb.yaml", []byte(webtest.SpiderYAML("realweb", base)))
	if err != nil {
		t.Fatal(err)
	}
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, rdb, sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	got := sink.keys()
	for _, p := range site.Pages() {
		key, _ := json.Marshal([]string{"page", p.Name})
		if got[string(key)] != 1 {
			t.Errorf("%s: item %s stored %d times, want once; items: %v", p.Path, key, got[string(key)], got)
		}
	}
	if len(got) != len(site.Pages()) {
		t.Errorf("%d items stored, want %d: %v", len(got), len(site.Pages()), got)
	}
	if n := site.Hits()[webtest.BinaryPath]; n != 1 {
		t.Errorf("binary body fetched %d times, want once (not retried)", n)
	}
	st, err := inspect.ReadStatus(ctx, rdb, streams.NewLayout("realweb", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Stats["bodies_not_text"] != 1 || st.DeadLetters != 0 {
		t.Errorf("bodies_not_text = %d (want 1), dead letters = %d (want 0)", st.Stats["bodies_not_text"], st.DeadLetters)
	}
	if st.Stats["bodies_decoded_shift_jis"] != 2 || st.Stats["bodies_decoded_gbk"] != 2 || st.Stats["bodies_decoded_euc-kr"] != 2 {
		t.Errorf("decoded counters: %v", st.Stats)
	}
}

// TestUTF16AndXMLDeclaredPagesAreRead: a page declared charset=utf-16le without a BOM
// (its zero bytes made it look binary, and it was dropped) and an XHTML page in KOI8-R
// that says so only in its <?xml encoding?> declaration (read as windows-1252:
// mojibake) both give their text.
func TestUTF16AndXMLDeclaredPagesAreRead(t *testing.T) {
	srv := streamstest.Start(t)
	utf16 := func(s string) []byte {
		b, _ := unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM).NewEncoder().Bytes([]byte(s))
		return b
	}
	koi8, _ := charmap.KOI8R.NewEncoder().Bytes([]byte(`<?xml version="1.0" encoding="KOI8-R"?>` +
		`<html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title></head><body><h1>Привет</h1></body></html>`))
	site := counted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/0":
			page(w, "home", "/u16", "/xhtml")
		case "/u16":
			w.Header().Set("Content-Type", "text/html; charset=utf-16le")
			_, _ = w.Write(utf16("<html><body><h1>Grüße</h1></body></html>"))
		case "/xhtml":
			w.Header().Set("Content-Type", "application/xhtml+xml")
			_, _ = w.Write(koi8)
		}
	}))
	base := serve(t, site)
	sp := titleSpider("utf16", base)
	sink := newMemSink()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := runCrawl(ctx, t, srv.Client(), sp, sink, nil); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/u16": "Grüße", "/xhtml": "Привет"} {
		it, ok := sink.item(fmt.Sprintf(`["page","%s%s"]`, base, path))
		if !ok || it.Fields["title"] != want {
			t.Errorf("%s: item %v (stored %v), want title %q", path, it.Fields, ok, want)
		}
	}
}
