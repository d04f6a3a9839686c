package spiders

import (
	"bytes"
	"fmt"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// keepOuter and keepInner are how many levels of a too deeply nested document the
// fallback parse keeps: the outermost keepOuter (the page's frame) and the innermost
// keepInner (where the content sits). Together well under the parser's 512.
const (
	keepOuter = 200
	keepInner = 200
)

// ParseHTML parses a UTF-8 HTML document as a browser that runs no scripts does (as a
// crawler is): the content of <noscript> is elements, so its links and text are
// found, not one opaque string of markup. x/net/html refuses a
// document with more than 512 open elements (generated pages and hostile ones have
// thousands); such a document is parsed again with the middle of its nesting unwrapped:
// the outermost and innermost levels of every branch keep their elements, the levels
// between lose their tags, and all text, links and leaf elements stay where they were.
func ParseHTML(body []byte) (*html.Node, error) {
	doc, err := html.ParseWithOptions(bytes.NewReader(body), html.ParseOptionEnableScripting(false))
	if err == nil {
		return doc, nil
	}
	doc, ferr := html.ParseWithOptions(bytes.NewReader(flatten(body, keepOuter, keepInner)), html.ParseOptionEnableScripting(false))
	if ferr != nil {
		return nil, fmt.Errorf("spiders: parse html: %w (flattened: %w)", err, ferr)
	}
	return doc, nil
}

// flatten rewrites body so that no branch nests more than outer+inner elements, as the
// tokenizer counts nesting: a start tag is kept when fewer than outer elements enclose
// it or when its subtree is at most inner levels high; the end tag follows its start
// tag. Text, comments, void elements and self-closing tags are copied as they are.
func flatten(body []byte, outer, inner int) []byte {
	// Pass 1: the height of every element (by its start tag's index).
	var height []int
	var stack []int
	closeTop := func() {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(stack) > 0 {
			if p := stack[len(stack)-1]; height[i]+1 > height[p] {
				height[p] = height[i] + 1
			}
		}
	}
	forEachTag(body, func(tt html.TokenType, _ []byte) {
		switch tt {
		case html.StartTagToken:
			height = append(height, 1)
			stack = append(stack, len(height)-1)
		case html.EndTagToken:
			if len(stack) > 0 {
				closeTop()
			}
		}
	})
	for len(stack) > 0 {
		closeTop()
	}
	// Pass 2: copy what is kept.
	out := make([]byte, 0, len(body))
	var open []bool
	next := 0
	forEachTag(body, func(tt html.TokenType, raw []byte) {
		switch tt {
		case html.StartTagToken:
			keep := len(open) < outer || height[next] <= inner
			next++
			open = append(open, keep)
			if keep {
				out = append(out, raw...)
			}
		case html.EndTagToken:
			keep := true
			if len(open) > 0 {
				keep = open[len(open)-1]
				open = open[:len(open)-1]
			}
			if keep {
				out = append(out, raw...)
			}
		default:
			out = append(out, raw...)
		}
	})
	return out
}

// forEachTag calls fn with every token of body and its raw bytes, reporting the start
// tags of void elements as text (they never nest).
func forEachTag(body []byte, fn func(html.TokenType, []byte)) {
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return
		case html.StartTagToken:
			if name, _ := z.TagName(); isVoid(atom.Lookup(name)) {
				tt = html.TextToken
			}
		}
		fn(tt, z.Raw())
	}
}

// isVoid reports elements that never have content.
func isVoid(a atom.Atom) bool {
	switch a {
	case atom.Area, atom.Base, atom.Br, atom.Col, atom.Embed, atom.Hr, atom.Img, atom.Input,
		atom.Link, atom.Meta, atom.Param, atom.Source, atom.Track, atom.Wbr:
		return true
	}
	return false
}
