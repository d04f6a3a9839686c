package sitekit

import "net/http"

// HTMLType is the content type of every HTML page the sites serve.
const HTMLType = "text/html; charset=utf-8"

// TextType is the content type of the sites' plain-text answers (robots.txt, errors).
const TextType = "text/plain; charset=utf-8"

// Kind is what a URL of a site answers.
type Kind int

// Kinds of answers. The sites' own Kind types use the same values.
const (
	// HTML is a 200 text/html page.
	HTML Kind = iota + 1
	// NotFound is a 404.
	NotFound
	// ServerError is a 500.
	ServerError
	// NonHTML is a 200 answer that is not HTML.
	NonHTML
)

// String returns the name of the kind.
func (k Kind) String() string {
	switch k {
	case HTML:
		return "html"
	case NotFound:
		return "not-found"
	case ServerError:
		return "server-error"
	case NonHTML:
		return "non-html"
	}
	return "unknown"
}

// Classify returns the kind of an answer with status and content type ctype: a 404 is
// NotFound, any 5xx ServerError, HTMLType HTML, anything else NonHTML.
func Classify(status int, ctype string) Kind {
	switch {
	case status == http.StatusNotFound:
		return NotFound
	case status >= 500:
		return ServerError
	case ctype == HTMLType:
		return HTML
	}
	return NonHTML
}
