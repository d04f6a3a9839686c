package spiders

import (
	"encoding/json"
	"strings"

	"golang.org/x/net/html"
)

// readJSONLD returns the value of every JSON-LD script of the page under root
// (<script type="application/ld+json">), in document order. A script that is not
// valid JSON is left out: pages carry broken JSON-LD now and then, and the page's
// other data is still good.
func readJSONLD(root *html.Node) []any {
	var out []any
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "script" {
			if t, ok := attr(n, "type"); ok && isJSONLDType(t) {
				if v, ok := decodeJSONLD(rawText(n)); ok {
					out = append(out, v)
				}
			}
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return out
}

// isJSONLDType reports a script type of JSON-LD ("application/ld+json", any case,
// parameters allowed).
func isJSONLDType(t string) bool {
	t, _, _ = strings.Cut(t, ";")
	return strings.EqualFold(strings.TrimSpace(t), "application/ld+json")
}

// rawText returns the text of n's text children as written (a script's source).
func rawText(n *html.Node) string {
	if c := n.FirstChild; c != nil && c.NextSibling == nil && c.Type == html.TextNode {
		return c.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}

// decodeJSONLD decodes a script's JSON, without the HTML comment or CDATA wrapper
// some pages still put around it.
func decodeJSONLD(src string) (any, bool) {
	s := strings.TrimSpace(src)
	for _, w := range [][2]string{{"<!--", "-->"}, {"<![CDATA[", "]]>"}, {"//<![CDATA[", "//]]>"}} {
		if strings.HasPrefix(s, w[0]) && strings.HasSuffix(s, w[1]) {
			s = strings.TrimSpace(s[len(w[0]) : len(s)-len(w[1])])
		}
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, false
	}
	return v, true
}
