package sitekit

import (
	"fmt"
	"net/url"
	"strings"
)

// SpiderYAML returns a YAML spider called name that crawls the site served at baseURL
// (e.g. "http://127.0.0.1:8080/"): it starts at baseURL with a trailing slash, follows
// every a[href] on the site's host and stores the items described by items, the YAML
// list entries under "items:" (each line indented and ending with a newline).
// allowed_domains is the host of baseURL without its port.
func SpiderYAML(name, baseURL, items string) string {
	host := baseURL
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	start := baseURL
	if !strings.HasSuffix(start, "/") {
		start += "/"
	}
	return fmt.Sprintf(`name: %s
start_urls: [%s]
allowed_domains: [%s]
follow:
  - links: "a[href]"
items:
%ssettings:
  concurrency: 32
  per_host_concurrency: 32       # one host: let every fetch slot use it
  allow_networks: [127.0.0.1/32, "::1/128"]  # the site runs on loopback; nothing else private
`, name, start, host, items)
}
