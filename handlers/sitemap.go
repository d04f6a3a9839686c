package handlers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// Sitemap bounds, from the protocol (sitemaps.org): a sitemap holds at most 50,000
// URLs and 50 MB uncompressed; an index lists sitemaps, not other indexes.
const (
	// maxSitemapBytes caps what a sitemap inflates to: a 2.9 MB gzip bomb inflated to
	// hundreds of MB, all of it held by the parse process.
	maxSitemapBytes = 50 << 20
	// maxSitemapURLs caps the entries taken from one sitemap.
	maxSitemapURLs = 50000
	// maxSitemapLevel is the deepest sitemap whose index entries are followed: a
	// sitemap an index lists (level 1) that is an index itself lists nothing more.
	maxSitemapLevel = 0
)

// builtin returns the parse stage's own callbacks (sitemap crawling), which every
// spider has.
func (p *parser) builtin(name string) (spiders.Callback, bool) {
	switch name {
	case spiders.SitemapCallback:
		return p.parseSitemap, true
	case spiders.RobotsSitemapsCallback:
		return robotsSitemaps, true
	}
	return nil, false
}

// robotsSitemaps follows the Sitemap: lines of a robots.txt.
func robotsSitemaps(_ context.Context, res *spiders.Response, out *spiders.Output) error {
	if res.Status >= 300 || res.MaxLinks < 0 {
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(res.Body))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(key), "sitemap") {
			continue
		}
		if req, err := res.Follow(strings.TrimSpace(val), spiders.SitemapCallback); err == nil {
			req.Depth = res.Depth() // the sitemaps a site names do not count as depth
			req.SitemapLevel = 0
			out.Follow(req)
		}
	}
	return nil
}

// parseSitemap requests every page of a sitemap (parsed by "parse") and every sitemap of
// a sitemap index, reading the XML as a stream (gzipped sitemaps, recognised by their
// magic bytes, inflated as they are read) up to maxSitemapBytes and maxSitemapURLs.
// The sitemaps of an index are one level deeper than the index (max_depth applies to
// them) and one level further in sitemaps: past maxSitemapLevel an index lists nothing
// (counted sitemaps_nested_too_deep). Nothing is read once the crawl's max_pages is
// spent (res.MaxLinks < 0).
func (p *parser) parseSitemap(_ context.Context, res *spiders.Response, out *spiders.Output) error {
	if res.MaxLinks < 0 {
		return nil
	}
	var r io.Reader = bytes.NewReader(res.Body)
	if len(res.Body) > 2 && res.Body[0] == 0x1f && res.Body[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("%w: handlers: sitemap %s: %w", errSpiderInput, spiders.RedactedURL(res.URL), err)
		}
		defer zr.Close()
		r = zr
	}
	capped := &capReader{r: r, left: maxSitemapBytes}
	level := 0
	if res.Request != nil {
		level = res.Request.SitemapLevel
	}
	n, nested := 0, 0
	err := eachSitemapLoc(capped, func(loc string, index bool) bool {
		if n >= maxSitemapURLs {
			return false
		}
		if index && level > maxSitemapLevel {
			nested++
			return true
		}
		cb, depth := spiders.DefaultCallback, res.Depth()+1
		if index {
			cb = spiders.SitemapCallback
		}
		if req, err := res.Follow(strings.TrimSpace(loc), cb); err == nil {
			req.Depth = depth
			if index {
				req.SitemapLevel = level + 1
			}
			out.Follow(req)
			n++
		}
		return true
	})
	p.count("sitemaps_nested_too_deep", int64(nested))
	if capped.cut || n >= maxSitemapURLs {
		p.count("sitemaps_cut", 1)
		p.limits.Warn("sitemap cut at 50 MB or 50,000 URLs", nil)
		return nil // what was read before the cut counts
	}
	if err != nil && n == 0 && nested == 0 {
		return fmt.Errorf("%w: handlers: sitemap %s: %w", errSpiderInput, spiders.RedactedURL(res.URL), err)
	}
	return nil
}

// eachSitemapLoc calls fn with the text of each <loc> of a <url> (index false) or a
// <sitemap> (index true) as the XML decoder meets it, until fn returns false or the
// document ends; it returns the decoder's error, if any.
func eachSitemapLoc(r io.Reader, fn func(loc string, index bool) bool) error {
	dec := xml.NewDecoder(r)
	dec.Strict = false
	var parent string // "url" or "sitemap" while inside one
	var loc strings.Builder
	inLoc := false
	for {
		tok, err := dec.RawToken()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch name := strings.ToLower(t.Name.Local); {
			case name == "url" || name == "sitemap":
				parent = name
			case name == "loc" && parent != "":
				inLoc = true
				loc.Reset()
			}
		case xml.CharData:
			if inLoc && loc.Len() < 8<<10 {
				loc.Write(t)
			}
		case xml.EndElement:
			switch name := strings.ToLower(t.Name.Local); {
			case name == "loc" && inLoc:
				inLoc = false
				if !fn(loc.String(), parent == "sitemap") {
					return nil
				}
			case name == parent:
				parent = ""
			}
		}
	}
}

// capReader reads r up to left bytes, then ends as if r had (cut says it did).
type capReader struct {
	r    io.Reader
	left int64
	cut  bool
}

func (c *capReader) Read(b []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, _ := c.r.Read(one[:]); n > 0 {
			c.cut = true
		}
		return 0, io.EOF
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.r.Read(b)
	c.left -= int64(n)
	return n, err
}
