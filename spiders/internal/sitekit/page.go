package sitekit

import (
	"net/http"
	"strconv"
)

// Page appends one answer of a site to a byte slice: a render function writes its page
// with S, I and O and returns B.
type Page struct {
	// B is the answer so far.
	B []byte
	// Origin ("http://host:port") is written wherever the page needs an absolute link.
	Origin string
}

// S appends the strings.
func (p *Page) S(parts ...string) {
	for _, s := range parts {
		p.B = append(p.B, s...)
	}
}

// I appends n in decimal.
func (p *Page) I(n int) { p.B = strconv.AppendInt(p.B, int64(n), 10) }

// O appends the origin.
func (p *Page) O() { p.B = append(p.B, p.Origin...) }

// PageLink writes one item of a listing's pagination: a link to page m of the listing
// at base (base itself for page 1) with the text label.
func (p *Page) PageLink(base string, m int, label string) {
	p.S(`<li><a href="`, base)
	if m > 1 {
		p.S("?page=")
		p.I(m)
	}
	p.S(`">`, label, "</a></li>\n")
}

// Error writes the small body of an answer with the HTTP status code (a 404 or a 500)
// that links only the home page, with the text home, and returns the answer.
func (p *Page) Error(code int, home string) ([]byte, int, string) {
	status := strconv.Itoa(code) + " " + http.StatusText(code)
	p.S("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>", status,
		"</title></head>\n<body><h1>", status, "</h1><p><a href=\"/\">", home, "</a></p></body></html>\n")
	return p.B, code, HTMLType
}

// Robots writes a robots.txt that disallows the path prefix disallow to every user
// agent (a site's Crawler.Disallow) and returns the answer.
func (p *Page) Robots(disallow string) ([]byte, int, string) {
	p.S("User-agent: *\nDisallow: ", disallow, "\n")
	return p.B, http.StatusOK, TextType
}
