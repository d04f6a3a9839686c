package spiders

import (
	"context"
	"testing"
)

// TestFingerprintNamesTheSpider: comments, layout and key order of a YAML spider do not
// change its fingerprint; its start URLs, rules or settings do. A Go spider's does not
// change when its settings are defaulted (every run defaults a copy) but does when a
// setting, a start URL or a callback changes.
func TestFingerprintNamesTheSpider(t *testing.T) {
	parse := func(doc string) string {
		t.Helper()
		sp, _, err := Parse("t.yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		return sp.Fingerprint()
	}
	base := parse("name: s\nstart_urls: [http://a.test/]\nsettings:\n  concurrency: 4\n  max_pages: 10\n")
	same := parse("# the same spider\nsettings: {max_pages: 10, concurrency: 4}\nstart_urls:\n  - http://a.test/\nname: s\n")
	if base != same {
		t.Errorf("comments and key order changed the fingerprint: %s vs %s", base, same)
	}
	for _, other := range []string{
		"name: s\nstart_urls: [http://b.test/]\nsettings:\n  concurrency: 4\n  max_pages: 10\n",
		"name: s\nstart_urls: [http://a.test/]\nsettings:\n  concurrency: 4\n  max_pages: 11\n",
		"name: s\nstart_urls: [http://a.test/]\nsettings:\n  concurrency: 4\n  max_pages: 10\nitems:\n  - type: page\n    fields: {title: title}\n",
	} {
		if fp := parse(other); fp == base {
			t.Errorf("another spider has the same fingerprint %s:\n%s", fp, other)
		}
	}

	goSpider := func() *Spider {
		sp := &Spider{Name: "g", StartURLs: []string{"http://a.test/"}, Callbacks: map[string]Callback{}}
		sp.Settings.Concurrency = 3
		sp.Handle("parse", func(context.Context, *Response, *Output) error { return nil })
		return sp
	}
	g := goSpider()
	fp := g.Fingerprint()
	g.Settings.SetDefaults()
	if got := g.Fingerprint(); got != fp {
		t.Errorf("defaulting the settings changed the fingerprint: %s, was %s", got, fp)
	}
	if fp == base {
		t.Error("a Go spider has a YAML spider's fingerprint")
	}
	changes := map[string]func(*Spider){
		"setting":   func(s *Spider) { s.Settings.MaxPages = 5 },
		"start URL": func(s *Spider) { s.StartURLs = append(s.StartURLs, "http://a.test/2") },
		"callback":  func(s *Spider) { s.Handle("item", func(context.Context, *Response, *Output) error { return nil }) },
	}
	for what, change := range changes {
		s := goSpider()
		change(s)
		if s.Fingerprint() == fp {
			t.Errorf("a changed %s kept the fingerprint %s", what, fp)
		}
	}
}
