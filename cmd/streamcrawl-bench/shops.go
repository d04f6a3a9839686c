package main

import (
	"context"
	"net"

	"github.com/streamcrawl/streamcrawl/cmd/internal/cli"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// shops are demo shops served in this process, each on its own port of 127.0.0.1 (its
// own host to a crawl: a host key keeps the port) and each linking to the others' home
// pages, so that a crawl seeded with the first reaches them all. One Site serves every
// port: its pages are built from the request's origin, and it leaves that origin out of
// its links to peers; its request count is theirs together.
type shops struct {
	site  *demosite.Site
	bases []string // "http://127.0.0.1:PORT/", the first the crawl's start
	stop  context.CancelFunc
	done  chan error
}

// serveShops serves hosts shops of pages pages of about pageSize bytes until close.
func serveShops(ctx context.Context, hosts, pages, pageSize int) (*shops, error) {
	site := demosite.New(pages)
	site.SetPageSize(pageSize)
	var lns []net.Listener
	var bases []string
	for range hosts {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, l := range lns {
				_ = l.Close()
			}
			return nil, err
		}
		lns, bases = append(lns, ln), append(bases, "http://"+ln.Addr().String()+"/")
	}
	if err := site.SetPeers(bases); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &shops{site: site, bases: bases, stop: cancel, done: make(chan error, hosts)}
	for _, ln := range lns {
		go func() { s.done <- cli.Serve(ctx, ln, site) }()
	}
	return s, nil
}

// close stops the shops and waits for them.
func (s *shops) close() {
	s.stop()
	for range s.bases {
		<-s.done
	}
}
