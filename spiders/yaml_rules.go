package spiders

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
)

// yamlRules is the compiled extraction part of a YAML spider: what to follow and which
// items to yield. Its parse method is the spider's "parse" callback.
type yamlRules struct {
	follow []followRule
	items  []itemRule
	render Render // the spider's
}

// followRule follows the links of the elements matching links whose path and query
// match one of allow (when there are any) and none of deny.
type followRule struct {
	links cascadia.Selector
	allow []*regexp.Regexp
	deny  []*regexp.Regexp
	// render and page go with the requests the rule makes; pageType names the rule's
	// pages for RenderAuto ("follow[i]").
	render   Render
	page     *Page
	pageType string
}

// itemRule yields one item of type typ on a page where when matches (nil: every page).
type itemRule struct {
	typ      string
	when     cascadia.Selector
	key      []string
	keyByURL bool // key_missing: url
	fields   []fieldRule
}

// parse yields the items and follow-up requests of an HTML page; other pages yield nothing.
func (y *yamlRules) parse(_ context.Context, res *Response, out *Output) error {
	if !res.IsHTML() {
		return nil
	}
	doc, err := res.Doc()
	if err != nil {
		return err
	}
	if len(doc.Nodes) == 0 {
		return nil
	}
	root := doc.Nodes[0]
	pg := &fieldPage{res: res, root: root}
	for i := range y.items {
		if it, ok := y.items[i].extract(pg); ok {
			out.Yield(it)
		}
	}
	if len(y.follow) == 0 {
		return nil
	}
	seen := map[string]struct{}{}
	for _, f := range y.follow {
		res.eachLink(f.links, func(u *url.URL, abs string) {
			if !f.wants(u.RequestURI()) {
				return
			}
			if _, dup := seen[abs]; dup {
				return
			}
			seen[abs] = struct{}{}
			req := res.follow(abs, DefaultCallback) // eachLink yields valid absolute http(s) links
			f.apply(req, y.render)
			out.Follow(req)
		})
	}
	return nil
}

// apply gives req the rule's render mode and page behaviour, and its page type when
// the mode in force is RenderAuto (spider: the spider's Render).
func (f *followRule) apply(req *Request, spider Render) {
	req.Render, req.Page = f.render, f.page
	if f.render == RenderAuto || f.render == RenderDefault && spider == RenderAuto {
		req.PageType = f.pageType
	}
}

// follows reports whether a link to u passes the allow and deny of at least one rule.
func (y *yamlRules) follows(u *url.URL) bool {
	for i := range y.follow {
		if y.follow[i].wants(u.RequestURI()) {
			return true
		}
	}
	return false
}

// wants reports whether a link with this path and query passes allow and deny.
func (f *followRule) wants(pathQuery string) bool {
	for _, re := range f.deny {
		if re.MatchString(pathQuery) {
			return false
		}
	}
	if len(f.allow) == 0 {
		return true
	}
	for _, re := range f.allow {
		if re.MatchString(pathQuery) {
			return true
		}
	}
	return false
}

// extract returns the rule's item for the page, or false when when does not match.
func (r *itemRule) extract(pg *fieldPage) (Item, bool) {
	if r.when != nil && r.when.MatchFirst(pg.root) == nil {
		return Item{}, false
	}
	fields := make(map[string]any, len(r.fields))
	for i := range r.fields {
		if v, ok := r.fields[i].extract(pg, pg.root); ok {
			fields[r.fields[i].name] = v
		}
	}
	it := NewItem(r.typ, fields)
	it.URL = pg.res.URL
	if len(r.key) > 0 {
		it.KeyFields = append([]string(nil), r.key...)
		it.KeyByURL = r.keyByURL
	}
	return it, true
}

// nodeText returns the text under n (script and style content left out), trimmed, with
// runs of whitespace collapsed to one space.
func nodeText(n *html.Node) string {
	var b strings.Builder
	pendingSpace := false
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			if n.Data == "" {
				return
			}
			if first, _ := utf8.DecodeRuneInString(n.Data); unicode.IsSpace(first) {
				pendingSpace = true
			}
			for _, f := range strings.Fields(n.Data) {
				if pendingSpace && b.Len() > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(f)
				pendingSpace = true
			}
			last, _ := utf8.DecodeLastRuneInString(n.Data)
			pendingSpace = unicode.IsSpace(last)
			return
		case html.ElementNode:
			if n.Data == "script" || n.Data == "style" {
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// compileFieldSelector splits a field expression ("CSS", "CSS::text", "CSS::attr(NAME)")
// into its compiled CSS selector and attribute name ("" for text). inRow, the CSS may
// be empty ("::text", "::attr(data-id)"): the row itself, and the selector is nil.
func compileFieldSelector(expr string, inRow bool) (cascadia.Selector, string, error) {
	css, attrName := strings.TrimSpace(expr), ""
	switch {
	case strings.HasSuffix(css, "::text"):
		css = strings.TrimSuffix(css, "::text")
	case strings.HasSuffix(css, ")") && strings.Contains(css, "::attr("):
		i := strings.LastIndex(css, "::attr(")
		attrName = strings.ToLower(strings.TrimSpace(css[i+len("::attr(") : len(css)-1]))
		css = css[:i]
		if attrName == "" {
			return nil, "", fmt.Errorf("empty attribute name in %q", expr)
		}
	}
	if inRow && strings.TrimSpace(css) == "" {
		return nil, attrName, nil
	}
	sel, err := compileSelector(css)
	if err != nil {
		return nil, "", err
	}
	return sel, attrName, nil
}

// compileSelector compiles a CSS selector, rejecting an empty one.
func compileSelector(css string) (cascadia.Selector, error) {
	css = strings.TrimSpace(css)
	if css == "" {
		return nil, fmt.Errorf("empty selector")
	}
	sel, err := cascadia.Compile(css)
	if err != nil {
		return nil, fmt.Errorf("invalid selector %q: %w", css, err)
	}
	return sel, nil
}
