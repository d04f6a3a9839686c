package spiders

import "strings"

// InternalMetaPrefix starts the request meta keys that are the crawler's own
// bookkeeping, not the user's data: "_revisit", the interval state a revisited URL
// carries from one fetch to the next, is one. They travel with their request, and
// nowhere else: an item's _meta leaves them out (Item.Record, and the sinks), and the
// links of a page do not inherit them (Response.Follow, the parse stage). A spider's
// own meta keys should not start with it.
const InternalMetaPrefix = "_"

// UserMeta returns meta without the crawler's own keys (InternalMetaPrefix): meta
// itself when it holds none, a copy without them otherwise, nil when nothing is left.
func UserMeta(meta map[string]any) map[string]any {
	n := 0
	for k := range meta {
		if strings.HasPrefix(k, InternalMetaPrefix) {
			n++
		}
	}
	switch {
	case n == 0 && len(meta) > 0:
		return meta
	case n == len(meta):
		return nil
	}
	out := make(map[string]any, len(meta)-n)
	for k, v := range meta {
		if !strings.HasPrefix(k, InternalMetaPrefix) {
			out[k] = v
		}
	}
	return out
}
