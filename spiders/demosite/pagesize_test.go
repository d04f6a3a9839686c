package demosite

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var hrefRE = regexp.MustCompile(`(?:href|src)="[^"]*"`)

func TestSetPageSizePadsPagesKeepingLinksAndFields(t *testing.T) {
	plain, sized := New(300), New(300)
	sized.SetPageSize(25000)
	maxPara := 0
	for _, p := range sized.cat.paragraphs {
		maxPara = max(maxPara, len(p)+len("<p></p>\n"))
	}
	padded := 0
	for _, u := range plain.Reachable(false) {
		a, sa := renderPage(t, plain, u)
		b, sb := renderPage(t, sized, u)
		if sa != sb {
			t.Fatalf("%s: status %d, sized %d", u, sa, sb)
		}
		if sa != 200 || !bytes.HasPrefix(a, []byte("<!DOCTYPE html>")) || bytes.Contains(a, []byte("Not Found")) {
			if !bytes.Equal(a, b) {
				t.Errorf("%s: a non-page answer changed", u)
			}
			continue
		}
		if !slices.EqualFunc(hrefRE.FindAll(a, -1), hrefRE.FindAll(b, -1), bytes.Equal) {
			t.Errorf("%s: page size changed the links", u)
		}
		for _, field := range []string{`class="product-name"`, `class="price"`, `class="sku"`, `rel="canonical"`, `class="product"`} {
			if bytes.Count(a, []byte(field)) != bytes.Count(b, []byte(field)) {
				t.Errorf("%s: page size changed the count of %s", u, field)
			}
		}
		// At least the size asked for, up to one paragraph more (an origin's length
		// differs from the one the footer was measured with by a few bytes).
		if len(b) < 25000-16 || len(b) > 25000+maxPara+16 {
			t.Errorf("%s: %d bytes, want about 25000 (plain %d)", u, len(b), len(a))
		}
		if len(b) > len(a) {
			padded++
		}
		if !strings.HasSuffix(string(b), "</html>\n") {
			t.Errorf("%s: sized page does not end with </html>", u)
		}
	}
	if padded < 100 {
		t.Errorf("%d pages padded, want most of %d", padded, len(plain.Reachable(false)))
	}

	sized.SetPageSize(0)
	for _, u := range plain.Reachable(false)[:50] {
		a, _ := renderPage(t, plain, u)
		b, _ := renderPage(t, sized, u)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: SetPageSize(0) did not restore the plain page", u)
		}
	}
}
