package demosite

import (
	"bytes"
	"html"
	"net/url"
	"strings"
)

// eachHref calls fn with the entity-decoded href of every <a> element of an HTML page.
// It is a plain scanner, not a parser: enough for the site's own markup, and fast.
func eachHref(b []byte, fn func(href string)) {
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

// resolver turns hrefs found on one page into path?query on the site's host.
type resolver struct {
	origin string // "http://host"
	host   string
}

// resolve returns the path?query href points to from the page at base, without its
// fragment, and false for links off the site's host, non-http(s) links and links to
// the page itself by fragment only.
func (r *resolver) resolve(base *url.URL, href string) (string, bool) {
	if i := strings.IndexByte(href, '#'); i >= 0 {
		href = href[:i]
	}
	if href == "" {
		return "", false
	}
	if rest, ok := strings.CutPrefix(href, r.origin); ok && strings.HasPrefix(rest, "/") {
		href = rest
	}
	if href[0] == '/' && !strings.HasPrefix(href, "//") && !strings.Contains(href, "/.") {
		return href, true // the common case: root-relative and clean
	}
	u, err := url.Parse(href)
	if err != nil {
		return "", false
	}
	u = base.ResolveReference(u)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host != r.host {
		return "", false
	}
	return u.RequestURI(), true
}
