package sitekit

import (
	"bytes"
	"html"
	"net/url"
	"strings"
)

// EachHref calls fn with the entity-decoded href of every <a> element of an HTML page.
// It is a plain scanner, not a parser: enough for the sites' own markup, and fast.
func EachHref(b []byte, fn func(href string)) {
	for {
		i := bytes.Index(b, []byte("<a"))
		if i < 0 {
			return
		}
		b = b[i+2:]
		if len(b) == 0 || (b[0] != ' ' && b[0] != '\n' && b[0] != '\t') {
			continue // <abbr>, <article>, ...
		}
		end := bytes.IndexByte(b, '>')
		if end < 0 {
			return
		}
		tag := b[:end]
		b = b[end:]
		j := bytes.Index(tag, []byte("href="))
		if j < 0 || (j > 0 && tag[j-1] != ' ' && tag[j-1] != '\n') {
			continue
		}
		v := tag[j+len("href="):]
		if len(v) == 0 {
			continue
		}
		if q := v[0]; q == '"' || q == '\'' {
			k := bytes.IndexByte(v[1:], q)
			if k < 0 {
				continue
			}
			v = v[1 : 1+k]
		} else if k := bytes.IndexAny(v, " \t\n"); k >= 0 {
			v = v[:k]
		}
		href := string(v)
		if strings.IndexByte(href, '&') >= 0 {
			href = html.UnescapeString(href)
		}
		fn(strings.TrimSpace(href))
	}
}

// Resolver turns hrefs found on a site's pages into path?query on the site's host.
type Resolver struct {
	// Origin is "http://" + Host; absolute links that start with it are taken as
	// root-relative.
	Origin string
	// Host is the site's host; links to any other host are dropped.
	Host string
	// Canonical, when not nil, rewrites every resolved path and raw query into the
	// site's canonical path?query. Nil keeps path?query as written.
	Canonical func(path, rawQuery string) string
}

// Resolve returns the path?query href points to from the page at base, without its
// fragment, and false for links off the site's host, non-http(s) links and links to
// the page itself by fragment only.
func (r *Resolver) Resolve(base *url.URL, href string) (string, bool) {
	if i := strings.IndexByte(href, '#'); i >= 0 {
		href = href[:i]
	}
	if href == "" {
		return "", false
	}
	if rest, ok := strings.CutPrefix(href, r.Origin); ok && strings.HasPrefix(rest, "/") {
		href = rest
	}
	if href[0] == '/' && !strings.HasPrefix(href, "//") && !strings.Contains(href, "/.") {
		// The common case: root-relative and clean.
		if r.Canonical == nil {
			return href, true
		}
		path, query, _ := strings.Cut(href, "?")
		return r.Canonical(path, query), true
	}
	u, err := url.Parse(href)
	if err != nil {
		return "", false
	}
	u = base.ResolveReference(u)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host != r.Host {
		return "", false
	}
	if r.Canonical == nil {
		return u.RequestURI(), true
	}
	return r.Canonical(u.EscapedPath(), u.RawQuery), true
}
