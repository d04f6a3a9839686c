package cli

import (
	"path/filepath"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestCrawlSpiderSink: crawl writes items to the spider's sink key when no --out is
// given, and to --out when it is (the flag first, then the sink, then <name>.jsonl).
func TestCrawlSpiderSink(t *testing.T) {
	t.Parallel()
	site := demosite.New(30)
	base := serveSite(t, site)
	dir := t.TempDir()
	sink := filepath.Join(dir, "from-sink.jsonl")
	spider := writeFile(t, "shop.yaml", site.SpiderYAML("shop", base)+"sink: "+sink+"\n")

	srv := streamstest.Start(t)
	code, stdout, stderr := runCLI(t, crawlTimeout, nil, append([]string{"crawl", spider, "--redis", srv.URL()}, fastRetries...)...)
	if code != 0 {
		t.Fatalf("crawl: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkItems(t, readItems(t, sink), site.ExpectedItems(base), "product", "url")

	out := filepath.Join(dir, "from-flag.jsonl")
	srv2 := streamstest.Start(t)
	code, stdout, stderr = runCLI(t, crawlTimeout, nil, append([]string{"crawl", spider, "--redis", srv2.URL(), "--out", out}, fastRetries...)...)
	if code != 0 {
		t.Fatalf("crawl --out: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkItems(t, readItems(t, out), site.ExpectedItems(base), "product", "url")
	if n := len(readItems(t, sink)); n != len(site.ExpectedItems(base)) {
		t.Errorf("the sink file has %d items after a crawl with --out, want the first crawl's %d only", n, len(site.ExpectedItems(base)))
	}
}
