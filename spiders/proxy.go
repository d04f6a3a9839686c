package spiders

import (
	"fmt"
	"net/url"
)

// ParseProxy parses a proxy URL: http, https, socks5 or socks5h, with a host and port
// and optional credentials. Errors never repeat the credentials.
func ParseProxy(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("spiders: proxy url does not parse")
	}
	switch u.Scheme {
	case "http", "https", "socks5", "socks5h":
	default:
		return nil, fmt.Errorf("spiders: proxy %s: scheme %q: want http, https, socks5 or socks5h", u.Redacted(), u.Scheme)
	}
	if u.Hostname() == "" || u.Port() == "" {
		return nil, fmt.Errorf("spiders: proxy %s: want host:port", u.Redacted())
	}
	return u, nil
}
