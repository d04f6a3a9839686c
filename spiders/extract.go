package spiders

import "strings"

// Text returns the text of the elements the CSS selector sel matches on an HTML page,
// joined and trimmed of surrounding white space (like Colly's ChildText). It returns ""
// when nothing matches, when sel is not a valid selector, and for bodies that are not
// HTML; use Doc for finer work.
func (r *Response) Text(sel string) string {
	doc, err := r.Doc()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(doc.Find(sel).Text())
}

// Texts returns the trimmed text of each element sel matches, in document order
// (like Colly's ChildTexts); nil when nothing matches or the body is not HTML.
func (r *Response) Texts(sel string) []string {
	doc, err := r.Doc()
	if err != nil {
		return nil
	}
	s := doc.Find(sel)
	if s.Length() == 0 {
		return nil
	}
	out := make([]string, 0, s.Length())
	for i := range s.Nodes {
		out = append(out, strings.TrimSpace(s.Eq(i).Text()))
	}
	return out
}

// Attr returns the attribute name of the first element sel matches, trimmed of
// surrounding white space (like Colly's ChildAttr); "" when nothing matches, the
// element has no such attribute, or the body is not HTML.
func (r *Response) Attr(sel, name string) string {
	doc, err := r.Doc()
	if err != nil {
		return ""
	}
	v, _ := doc.Find(sel).First().Attr(name)
	return strings.TrimSpace(v)
}
