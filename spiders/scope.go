package spiders

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Reasons Scope.Allows gives for dropping a request.
const (
	// DropInvalid: the URL does not parse or has no host.
	DropInvalid = "invalid"
	// DropScheme: the scheme is not http or https.
	DropScheme = "scheme"
	// DropOffsite: the host is not one of the allowed domains nor a subdomain of one.
	DropOffsite = "offsite"
	// DropDepth: the request is deeper than the maximum depth.
	DropDepth = "depth"
)

// Scope decides which requests a crawl may make: http(s) only, hosts within the allowed
// domains, and no deeper than a maximum depth. A nil *Scope allows every http(s) request.
// A Scope is safe for concurrent use.
type Scope struct {
	domains  []string // as host key names (HostKeyName)
	maxDepth int
}

// NewScope returns the scope of allowedDomains (host names without port; a host matches
// a domain when it equals it or is a subdomain of it, case-insensitively, on any port;
// an empty list allows every host) and maxDepth (0 means no limit). It returns an error
// for a domain that is empty or carries a scheme, port or path.
func NewScope(allowedDomains []string, maxDepth int) (*Scope, error) {
	if maxDepth < 0 {
		return nil, fmt.Errorf("spiders: max depth %d is negative", maxDepth)
	}
	s := &Scope{maxDepth: maxDepth, domains: make([]string, 0, len(allowedDomains))}
	for _, d := range allowedDomains {
		nd, err := normalizeDomain(d)
		if err != nil {
			return nil, err
		}
		s.domains = append(s.domains, nd)
	}
	return s, nil
}

// Scope returns the scope of the spider's AllowedDomains and Settings.MaxDepth.
func (s *Spider) Scope() (*Scope, error) {
	return NewScope(s.AllowedDomains, s.Settings.MaxDepth)
}

// Allows reports whether r is in scope; when it is not, reason is one of DropInvalid,
// DropScheme, DropOffsite or DropDepth.
func (s *Scope) Allows(r *Request) (ok bool, reason string) {
	if r == nil {
		return false, DropInvalid
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return false, DropInvalid
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return false, DropScheme
	}
	host := HostKeyName(HostKeyOf(u))
	if host == "" {
		return false, DropInvalid
	}
	if s == nil {
		return true, ""
	}
	if !s.allowsHost(host) {
		return false, DropOffsite
	}
	if s.maxDepth > 0 && r.Depth > s.maxDepth {
		return false, DropDepth
	}
	return true, ""
}

// allowsHost reports whether the lower-case host is an allowed domain or a subdomain of one.
func (s *Scope) allowsHost(host string) bool {
	if len(s.domains) == 0 {
		return true
	}
	for _, d := range s.domains {
		if host == d || len(host) > len(d) && host[len(host)-len(d)-1] == '.' && strings.HasSuffix(host, d) {
			return true
		}
	}
	return false
}

// normalizeDomain checks an allowed domain and returns it as a host key's name: lower
// case, in ASCII (IDNA), without a trailing dot and, for an IPv6 address, without
// brackets.
func normalizeDomain(d string) (string, error) {
	nd := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
	if strings.HasPrefix(nd, "[") && strings.HasSuffix(nd, "]") {
		nd = nd[1 : len(nd)-1]
	}
	switch {
	case nd == "":
		return "", fmt.Errorf("spiders: allowed domain %q is empty", d)
	case strings.ContainsAny(nd, "/?#@ \t"):
		return "", fmt.Errorf("spiders: allowed domain %q: use a host name, not a url", d)
	case strings.Contains(nd, ":") && net.ParseIP(nd) == nil:
		return "", fmt.Errorf("spiders: allowed domain %q: use a host name without scheme or port", d)
	}
	return normalName(nd), nil
}
