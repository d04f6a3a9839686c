package handlers

import (
	"fmt"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// digestPage is a listing page's output: 20 items of 5 fields and 100 links.
func digestPage(views int) *spiders.Output {
	out := &spiders.Output{}
	for i := range 20 {
		out.Yield(spiders.NewItem("product", map[string]any{"name": fmt.Sprintf("Product %d", i), "price": 19.99 + float64(i),
			"url": fmt.Sprintf("https://shop.example/p/%d", i), "stock": i%3 == 0, "views": views + i}))
	}
	for i := range 100 {
		out.Requests = append(out.Requests, &spiders.Request{URL: fmt.Sprintf("https://shop.example/c/%d?page=2", i)})
	}
	return out
}

// The digest changes with an item's value or a link, not with a volatile field.
func TestPageDigestSeesItemsAndLinksButNotVolatileFields(t *testing.T) {
	base := pageDigest(digestPage(1), nil)
	if got := pageDigest(digestPage(1), nil); got != base {
		t.Fatalf("same output, digests %s and %s", base, got)
	}
	if got := pageDigest(digestPage(2), nil); got == base {
		t.Fatal("a changed field left the digest as it was")
	}
	if a, b := pageDigest(digestPage(1), []string{"views"}), pageDigest(digestPage(2), []string{"views"}); a != b {
		t.Fatalf("only a volatile field changed: digests %s and %s", a, b)
	}
	more := digestPage(1)
	more.Requests = append(more.Requests, &spiders.Request{URL: "https://shop.example/new"})
	if got := pageDigest(more, nil); got == base {
		t.Fatal("a new link left the digest as it was")
	}
}

// BenchmarkPageDigest is the parse stage's cost per page for the revisits' digest
// (20 items of 5 fields, 100 links).
func BenchmarkPageDigest(b *testing.B) {
	for _, volatile := range [][]string{nil, {"views"}} {
		b.Run(fmt.Sprintf("volatile=%d", len(volatile)), func(b *testing.B) {
			out := digestPage(1)
			b.ReportAllocs()
			for b.Loop() {
				pageDigest(out, volatile)
			}
		})
	}
}
