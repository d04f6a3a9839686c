package spiders

import (
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
)

// Links returns the links of the elements matching the CSS selector, in document order,
// as absolute http(s) URLs without fragments, written as browsers send them (WireURL),
// each once, at most MaxLinks for the page. An element's link is its href attribute,
// or its src attribute when it has no href; it is resolved against BaseURL.
// Malformed links, empty links, links to a fragment of this page and links with another
// scheme (javascript:, mailto:, tel:, data:, ...) are skipped.
//
// A page that is not HTML and an invalid selector give no links; to catch a bad
// selector early, compile it once with cascadia.Compile and call LinksMatching.
func (r *Response) Links(selector string) []string {
	sel, err := cascadia.Compile(selector)
	if err != nil {
		return nil
	}
	return r.LinksMatching(sel)
}

// LinksMatching is Links for a compiled selector.
func (r *Response) LinksMatching(m goquery.Matcher) []string {
	var out []string
	r.eachLink(m, func(_ *url.URL, abs string) { out = append(out, abs) })
	return out
}

// eachLink calls fn with each link of the elements matching m, as Links describes them.
func (r *Response) eachLink(m goquery.Matcher, fn func(u *url.URL, abs string)) {
	if r.MaxLinks < 0 {
		return
	}
	doc, err := r.Doc()
	if err != nil {
		return
	}
	base := r.BaseURL()
	nodes := doc.FindMatcher(m).Nodes
	seen := make(map[string]struct{}, min(len(nodes), 1024))
	for i, n := range nodes {
		if r.MaxLinks > 0 && r.linksGiven >= r.MaxLinks {
			r.linksCut += len(nodes) - i // about: duplicates among them are counted too
			return
		}
		href, ok := attr(n, "href")
		if !ok {
			href, _ = attr(n, "src")
		}
		href = cleanHref(href)
		if href == "" || href[0] == '#' {
			continue
		}
		u, err := base.Parse(href)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			continue
		}
		abs := WireURL(u) // as a browser sends it; no fragment
		if _, dup := seen[abs]; dup {
			continue
		}
		seen[abs] = struct{}{}
		r.linksGiven++
		fn(u, abs)
	}
}

// cleanHref strips leading and trailing whitespace and removes tabs and newlines inside,
// as browsers do.
func cleanHref(href string) string {
	href = strings.TrimSpace(href)
	if strings.ContainsAny(href, "\t\r\n") {
		href = strings.NewReplacer("\t", "", "\r", "", "\n", "").Replace(href)
	}
	return href
}

// attr returns the value of the element's attribute key.
func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}
