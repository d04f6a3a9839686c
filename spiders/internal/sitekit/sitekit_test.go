package sitekit

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
)

// tiny renders a four-page site whose home links every case the crawler must handle.
func tiny(b []byte, origin, path, query string) ([]byte, int, string) {
	switch path {
	case "/":
		return fmt.Appendf(b, `<a href="/item/1">x</a><abbr href="/no"><a href="%s/item/2#top">`+
			`<a href='item/1?b=2&amp;a=1'><a href="http://other.test/x"><a href="mailto:a@b">`+
			`<a href="#top"><a href="/gone"><a href="/private/x"><a href="/feed">`, origin), http.StatusOK, HTMLType
	case "/item/1", "/item/2", "/private/x":
		return append(b, `<a href="/">home</a>`...), http.StatusOK, HTMLType
	case "/feed":
		return append(b, `<a href="/never">`...), http.StatusOK, "application/json"
	}
	return b, http.StatusNotFound, HTMLType
}

func itemID(path string) (int, bool) {
	if rest, ok := strings.CutPrefix(path, "/item/"); ok {
		return Number(rest)
	}
	return 0, false
}

func sortedQuery(path, rawQuery string) string {
	if rawQuery == "" {
		return path
	}
	parts := strings.Split(rawQuery, "&")
	sort.Strings(parts)
	return path + "?" + strings.Join(parts, "&")
}

func TestCrawler(t *testing.T) {
	for _, c := range []struct {
		name       string
		obeyRobots bool
		canonical  func(path, rawQuery string) string
		want       []string
	}{
		{"as written", false, nil, []string{"/", "/feed", "/gone", "/item/1", "/item/1?b=2&a=1", "/item/2", "/private/x"}},
		{"robots", true, nil, []string{"/", "/feed", "/gone", "/item/1", "/item/1?b=2&a=1", "/item/2"}},
		{"canonical", false, sortedQuery, []string{"/", "/feed", "/gone", "/item/1", "/item/1?a=1&b=2", "/item/2", "/private/x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cr := &Crawler{Host: "tiny.invalid", Render: tiny, Disallow: "/private/", Canonical: c.canonical, ID: itemID}
			tr := cr.Truth(c.obeyRobots)
			if !slices.Equal(tr.URLs, c.want) {
				t.Errorf("URLs (-want +got)\n-%v\n+%v", c.want, tr.URLs)
			}
			if want := []int{1, 2}; !slices.Equal(tr.IDs, want) {
				t.Errorf("IDs = %v, want %v", tr.IDs, want)
			}
			if got := tr.URLsOf(NotFound); !slices.Equal(got, []string{"/gone"}) {
				t.Errorf("URLsOf(NotFound) = %v", got)
			}
			if got := cr.KindOf("/feed"); got != NonHTML {
				t.Errorf("KindOf(/feed) = %v, want %v", got, NonHTML)
			}
			if cr.Truth(c.obeyRobots) != tr {
				t.Errorf("Truth is not cached")
			}
		})
	}
}

func TestResolve(t *testing.T) {
	r := &Resolver{Origin: "http://h.test", Host: "h.test"}
	base, _ := url.Parse("http://h.test/a/b?q=1")
	for href, want := range map[string]string{
		"/x?y=1#f":                 "/x?y=1",
		"http://h.test/x":          "/x",
		"https://h.test/x":         "/x",
		"c":                        "/a/c",
		"../c":                     "/c",
		"/a/./c":                   "/a/c",
		"?p=2":                     "/a/b?p=2",
		"#only":                    "",
		"//other.test/x":           "",
		"http://other.test/x":      "",
		"mailto:someone@h.test":    "",
		"javascript:void(0)":       "",
		"http://h.test:8080/x?a=b": "",
	} {
		got, ok := r.Resolve(base, href)
		if (want == "") == ok || got != want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", href, got, ok, want)
		}
	}
}

func TestCounter(t *testing.T) {
	var c Counter
	for _, k := range []string{"/a", "/b", "/a"} {
		c.Add(k)
	}
	if got := c.Snapshot(); fmt.Sprint(got) != "map[/a:2 /b:1]" || c.Total() != 3 {
		t.Errorf("Snapshot() = %v, Total() = %d; want map[/a:2 /b:1], 3", got, c.Total())
	}
	c.Reset()
	if len(c.Snapshot()) != 0 || c.Total() != 0 {
		t.Errorf("Reset left %v", c.Snapshot())
	}
}

func TestRandIsStable(t *testing.T) {
	// Changing these numbers changes every generated page: the sites must stay byte-identical.
	r := &Rand{State: 42}
	got := []int{Pick(1, 2, 1000), Pick(7, 3, 1000), r.Intn(1000), r.Intn(1000)}
	want := []int{803, 20, 160, 331}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
