package spiders

import (
	"net/url"
	"strings"

	"golang.org/x/net/idna"
)

// HostKey returns the one name of rawURL's host that a crawl uses wherever it names a
// host: partition, host queue and schedule, leases, limits, robots.txt cache (with the
// scheme: an origin), cookies, proxies, host statistics and scope. "" when rawURL has
// no host. It reads only the scheme and the authority, so it costs little on the path
// every link takes.
//
// The rules: lower case; an internationalised name in ASCII (IDNA, the lookup profile
// browsers use; a name it refuses is only lower-cased); a trailing dot dropped; the
// scheme's own default port dropped (80 for http, 443 for https, none for any other
// scheme); the leading zeros of a port dropped; an IPv6 address in brackets. So
// HTTP://Shop.Example.:0080/a and http://shop.example/b have one key, shop.example,
// while https://shop.example:80/ has its own, shop.example:80.
func HostKey(rawURL string) string {
	i := strings.Index(rawURL, "://")
	if i < 0 {
		return ""
	}
	authority := rawURL[i+3:]
	for j := 0; j < len(authority); j++ {
		if c := authority[j]; c == '/' || c == '?' || c == '#' {
			authority = authority[:j]
			break
		}
	}
	if j := strings.LastIndexByte(authority, '@'); j >= 0 {
		authority = authority[j+1:]
	}
	return hostKey(rawURL[:i], authority)
}

// HostKeyOf is HostKey of a parsed URL (its Scheme and Host). A URL without a scheme,
// such as &url.URL{Host: "proxy:3128"}, keeps any port.
func HostKeyOf(u *url.URL) string { return hostKey(u.Scheme, u.Host) }

// HostKeyName returns the name in a host key: the key without its port and an IPv6
// address without its brackets. Limit globs, allowed domains, cookie sites and the
// network guard's host names are matched against it.
func HostKeyName(key string) string {
	name, _ := splitHostPort(key)
	return name
}

// hostKey is HostKey of a scheme and an authority's host[:port].
func hostKey(scheme, hostport string) string {
	raw, rawPort := splitHostPort(hostport)
	name, port := normalName(raw), normalPort(rawPort)
	switch {
	case name == "":
		return ""
	case port == "" || port == defaultPort(scheme):
		port = ""
	case name == raw && port == rawPort:
		return hostport // already a key: no copy
	}
	if strings.IndexByte(name, ':') >= 0 {
		name = "[" + name + "]"
	}
	if port == "" {
		return name
	}
	return name + ":" + port
}

// splitHostPort splits host[:port] ([ipv6][:port] for an IPv6 address) without
// checking either part; the IPv6 address comes out of its brackets.
func splitHostPort(hostport string) (name, port string) {
	if strings.HasPrefix(hostport, "[") {
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return hostport[1:], ""
		}
		name, rest := hostport[1:end], hostport[end+1:]
		port, _ = strings.CutPrefix(rest, ":")
		return name, port
	}
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && strings.IndexByte(hostport, ':') == i {
		return hostport[:i], hostport[i+1:]
	}
	return hostport, ""
}

// normalName lower-cases a host name, drops its trailing dot, decodes its
// percent-escapes (as net/url does) and writes an internationalised name
// in ASCII. An IPv6 address is only lower-cased, its zone's '%' written %25.
func normalName(name string) string {
	upper, other := false, false // other: non-ASCII, '%' or ':'
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'A' <= c && c <= 'Z':
			upper = true
		case c >= 0x80 || c == '%' || c == ':':
			other = true
		}
	}
	if !other {
		name = strings.TrimSuffix(name, ".")
		if upper {
			return strings.ToLower(name)
		}
		return name
	}
	if strings.IndexByte(name, ':') >= 0 { // IPv6: its zone's '%' escaped, as in a URL
		if z, err := url.PathUnescape(name); err == nil {
			name = z // else unescaped already (net/url's Host)
		}
		return strings.ToLower(strings.Replace(name, "%", "%25", 1))
	}
	if strings.IndexByte(name, '%') >= 0 {
		if n, err := url.PathUnescape(name); err == nil {
			name = n
		}
	}
	name = strings.TrimSuffix(name, ".")
	if a, err := idna.Lookup.ToASCII(name); err == nil {
		return a // lower case already
	}
	return strings.ToLower(name)
}

// normalPort drops the leading zeros of a port ("0" stays).
func normalPort(port string) string {
	if len(port) < 2 || port[0] != '0' {
		return port
	}
	if p := strings.TrimLeft(port, "0"); p != "" {
		return p
	}
	return "0"
}

// defaultPort is the port a scheme implies: "80" for http, "443" for https, "" for any
// other.
func defaultPort(scheme string) string {
	switch {
	case strings.EqualFold(scheme, "http"):
		return "80"
	case strings.EqualFold(scheme, "https"):
		return "443"
	}
	return ""
}
