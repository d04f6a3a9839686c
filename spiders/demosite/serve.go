package demosite

import (
	"net/http"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// base is what every generated site shares: serving, request counts, ground truth.
type base = sitekit.Site

// requestKey returns path?query of r as sent, without allocating in the common case:
// the key the site counts a request under.
func requestKey(r *http.Request) string {
	if u := r.RequestURI; u != "" && u[0] == '/' {
		return u
	}
	return r.URL.RequestURI()
}
