package handlers

import (
	"encoding/json"
	"hash/fnv"
	"slices"
	"strconv"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// pageDigest is the digest a revisit compares to tell a changed page (revisit.go): of
// what the spider extracted from it, not of its bytes, so that what no item or link
// holds (a token in a comment, a CSRF input, a rotating ad) does not make the page
// "changed" on every fetch. It hashes (FNV-64a), in the order the callback yielded
// them, each item's type and its fields as JSON (maps encode with sorted keys), but not
// the fields the settings call volatile, then each link's URL. Its cost is one more
// JSON encoding of each item's fields; the page is parsed once.
func pageDigest(out *spiders.Output, volatile []string) string {
	h := fnv.New64a()
	for i := range out.Items {
		it := &out.Items[i]
		h.Write([]byte(it.Type))
		h.Write([]byte{0})
		b, err := json.Marshal(stable(it.Fields, volatile))
		if err != nil {
			b = []byte("?") // such an item fails on its way out anyway
		}
		h.Write(b)
		h.Write([]byte{0})
	}
	h.Write([]byte{1})
	for _, r := range out.Requests {
		h.Write([]byte(r.URL))
		h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 16)
}

// stable returns fields without the volatile ones: fields itself when it has none.
func stable(fields map[string]any, volatile []string) map[string]any {
	n := 0
	for _, name := range volatile {
		if _, ok := fields[name]; ok {
			n++
		}
	}
	if n == 0 {
		return fields
	}
	out := make(map[string]any, len(fields)-n)
	for k, v := range fields {
		if !slices.Contains(volatile, k) {
			out[k] = v
		}
	}
	return out
}
