package sitetest

import (
	"net/http"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// base is what every generated site shares: serving, request counts, ground truth.
type base = sitekit.Site

// requestKey returns the canonical path?query of r (see Canonical): the key the site
// counts a request under.
func requestKey(r *http.Request) string { return Canonical(r.URL.EscapedPath(), r.URL.RawQuery) }
