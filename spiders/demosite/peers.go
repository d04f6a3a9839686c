package demosite

import (
	"fmt"
	"html"
	"net/url"
)

// peer is another site the home page links to.
type peer struct {
	origin string // "http://host:port", written as Serve writes a request's origin
	li     string // its list item on the home page
}

// SetPeers makes the home page also link to the home page of each of origins
// ("http://127.0.0.1:40001", with or without a trailing slash), so that a crawl started
// on one site reaches others: each peer gets one absolute link, <origin>/, in a
// "Partner shops" list after the home page's notices. The peer served at the request's
// own origin is left out, so every site of a group can be given the whole group's
// origins; repeats are linked once. SpiderYAML's spider follows the links to peers on
// the same host name (allowed_domains ignores the port).
//
// Peers are other sites, counted and described by their own Site: the site's ground
// truth (Reachable, Products, ExpectedItems) and its other pages do not change. With
// no peers, the default, and after SetPeers(nil), the home page has no such list.
//
// It returns an error, and keeps the peers it had, when an origin is not
// http(s)://host[:port] with nothing after it but an optional "/". It is safe to call
// while the site serves: a page rendered meanwhile has the old or the new list.
func (s *Site) SetPeers(origins []string) error {
	var peers []peer
	seen := make(map[string]bool, len(origins))
	for _, o := range origins {
		origin, host, err := peerOrigin(o)
		if err != nil {
			return err
		}
		if seen[origin] {
			continue
		}
		seen[origin] = true
		peers = append(peers, peer{origin: origin, li: `<li><a class="peer" href="` + html.EscapeString(origin) + `/">` +
			html.EscapeString(host) + "</a></li>\n"})
	}
	if len(peers) == 0 {
		s.peers.Store(nil)
		return nil
	}
	s.peers.Store(&peers)
	return nil
}

// peerOrigin returns raw as scheme://host[:port] and its host[:port], or an error when
// it is anything more.
func peerOrigin(raw string) (origin, host string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("demosite: peer %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", "", fmt.Errorf("demosite: peer %q: want an origin like http://127.0.0.1:8080", raw)
	}
	return u.Scheme + "://" + u.Host, u.Host, nil
}

// peerLinks writes the list of peers other than the page's own origin, if any.
func (s *Site) peerLinks(p *page) {
	peers := s.peers.Load()
	if peers == nil {
		return
	}
	open := false
	for _, pr := range *peers {
		if pr.origin == p.Origin {
			continue
		}
		if !open {
			p.S("<section class=\"peers\">\n<h2>Partner shops</h2>\n<ul>\n")
			open = true
		}
		p.S(pr.li)
	}
	if open {
		p.S("</ul>\n</section>\n")
	}
}
