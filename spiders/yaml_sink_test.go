package spiders_test

import (
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// TestYAMLSink: the sink key is read as written, checked for its form, and left out of
// the crawl's definition (moving the items elsewhere keeps the crawl).
func TestYAMLSink(t *testing.T) {
	const base = "name: shop\nstart_urls: [http://127.0.0.1:1/]\n"
	for _, sink := range []string{"items/shop.jsonl", "out.CSV", "postgres://u:p@127.0.0.1/db?table=shop"} {
		sp, _, err := spiders.Parse("shop.yaml", []byte(base+"sink: "+sink+"\n"))
		if err != nil {
			t.Fatalf("sink %s: %v", sink, err)
		}
		if sp.Sink != sink {
			t.Errorf("Sink = %q, want %q", sp.Sink, sink)
		}
	}
	plain, _, err := spiders.Parse("shop.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	with, _, err := spiders.Parse("shop.yaml", []byte(base+"sink: a.jsonl\n"))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Fingerprint() != with.Fingerprint() {
		t.Errorf("the sink changed the spider's fingerprint: %s vs %s", plain.Fingerprint(), with.Fingerprint())
	}
	for bad, want := range map[string]string{
		`sink: ""`:             "empty string",
		"sink: [a.jsonl]":      "want a string",
		"sink: s3://b/k.jsonl": "another URL",
	} {
		_, _, err := spiders.Parse("shop.yaml", []byte(base+bad+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "sink") {
			t.Errorf("%s: error %v, want one naming sink and saying %q", bad, err, want)
		}
	}
}
