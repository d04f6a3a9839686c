// Package fetch turns a crawl's requests into responses: the HTTP client, the network
// guard, redirects, robots.txt, cookies and login, proxies, conditional requests, the
// body budget, the host's politeness turn and retry delays. The fetch stage of package
// handlers runs it on each request message.
package fetch
