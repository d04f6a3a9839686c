package sitekit

import "strconv"

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
