package spiders

import "golang.org/x/net/html"

// pageTags are the elements of a parsed page that the parse stage reads on every page
// besides the spider's own selectors: the first <base> with an href (BaseURL) and the
// <meta> elements with an http-equiv (MetaRefresh). One walk of the tree finds both, in
// document order, the elements cascadia's "base[href]" and "meta[http-equiv]" match
// (any namespace), where two selector searches walked it twice and compiled their
// selectors on every page.
type pageTags struct {
	base  *html.Node   // nil: none
	metas []*html.Node // in document order
}

// findPageTags walks the tree under root once, in document order.
func findPageTags(root *html.Node) pageTags {
	var t pageTags
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode {
				switch c.Data {
				case "base":
					if _, ok := attrAnyNS(c, "href"); ok && t.base == nil {
						t.base = c
					}
				case "meta":
					if _, ok := attrAnyNS(c, "http-equiv"); ok {
						t.metas = append(t.metas, c)
					}
				}
			}
			walk(c)
		}
	}
	walk(root)
	return t
}

// attrAnyNS is the value of n's first attribute named key in any namespace (what
// goquery's Selection.Attr returns).
func attrAnyNS(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// tags returns the page's pageTags, found once per response; ok is false when the body
// is not an HTML document.
func (r *Response) tags() (pageTags, bool) {
	doc, err := r.Doc()
	if err != nil {
		return pageTags{}, false
	}
	r.tagsOnce.Do(func() {
		for _, n := range doc.Nodes {
			t := findPageTags(n)
			if r.pageTags.base == nil {
				r.pageTags.base = t.base
			}
			r.pageTags.metas = append(r.pageTags.metas, t.metas...)
		}
	})
	return r.pageTags, true
}
