package spiders

import (
	"strings"

	"golang.org/x/net/html"
)

// readMicrodata returns the top-level microdata items of the page under root (elements
// with itemscope and no itemprop), in document order, each as an object: "@type" its
// itemtype (a list when it names several), "@id" its itemid, and a key per property
// holding its value, or a list of them when the property is given more than once. A
// property's value is a nested item for an element with itemscope, else, by element:
// meta content; a, area, link href; audio, embed, iframe, img, source, track, video
// src; object data (these resolved against the page); data, meter value; time
// datetime (or its text); any other the text, trimmed with runs of whitespace
// collapsed. itemref is not followed.
func readMicrodata(root *html.Node, res *Response) []any {
	var out []any
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && hasAttr(n, "itemscope") && !hasAttr(n, "itemprop") {
			out = append(out, microdataItem(n, res))
		}
		// On inside: an item without itemprop within another is a top-level item too.
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return out
}

// microdataItem returns the item of the element n, which has itemscope.
func microdataItem(n *html.Node, res *Response) map[string]any {
	item := map[string]any{}
	if t, ok := attr(n, "itemtype"); ok {
		if types := strings.Fields(t); len(types) == 1 {
			item["@type"] = types[0]
		} else if len(types) > 1 {
			list := make([]any, len(types))
			for i, t := range types {
				list[i] = t
			}
			item["@type"] = list
		}
	}
	if id, ok := attr(n, "itemid"); ok && strings.TrimSpace(id) != "" {
		item["@id"] = strings.TrimSpace(id)
	}
	var walk func(*html.Node)
	walk = func(p *html.Node) {
		for c := p.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if names, ok := attr(c, "itemprop"); ok {
				v := microdataValue(c, res)
				for _, name := range strings.Fields(names) {
					addProperty(item, name, v)
				}
			}
			if !hasAttr(c, "itemscope") { // a nested item's properties are its own
				walk(c)
			}
		}
	}
	walk(n)
	return item
}

// addProperty adds a value of property name to item: the value, or a list once the
// property has several.
func addProperty(item map[string]any, name string, v any) {
	switch old := item[name].(type) {
	case nil:
		item[name] = v
	case []any:
		item[name] = append(old, v)
	default:
		item[name] = []any{old, v}
	}
}

// microdataValue returns the value of the property element n (see readMicrodata).
func microdataValue(n *html.Node, res *Response) any {
	if hasAttr(n, "itemscope") {
		return microdataItem(n, res)
	}
	url := func(name string) any {
		v, _ := attr(n, name)
		if abs, err := res.Resolve(cleanHref(v)); err == nil && strings.TrimSpace(v) != "" {
			return abs
		}
		return strings.TrimSpace(v)
	}
	switch n.Data {
	case "meta":
		v, _ := attr(n, "content")
		return strings.TrimSpace(v)
	case "a", "area", "link":
		return url("href")
	case "audio", "embed", "iframe", "img", "source", "track", "video":
		return url("src")
	case "object":
		return url("data")
	case "data", "meter":
		v, _ := attr(n, "value")
		return strings.TrimSpace(v)
	case "time":
		if v, ok := attr(n, "datetime"); ok {
			return strings.TrimSpace(v)
		}
	}
	return nodeText(n)
}

// hasAttr reports whether the element n has the attribute key.
func hasAttr(n *html.Node, key string) bool {
	_, ok := attr(n, key)
	return ok
}
