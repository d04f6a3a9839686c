package handlers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// maxSitemapBytes caps a decompressed sitemap (the protocol allows 50 MB).
const maxSitemapBytes = 64 << 20

// builtinCallback returns the parse stage's own callbacks (sitemap crawling), which every
// spider has.
func builtinCallback(name string) (spiders.Callback, bool) {
	switch name {
	case spiders.SitemapCallback:
		return parseSitemap, true
	case spiders.RobotsSitemapsCallback:
		return robotsSitemaps, true
	}
	return nil, false
}

// robotsSitemaps follows the Sitemap: lines of a robots.txt.
func robotsSitemaps(_ context.Context, res *spiders.Response, out *spiders.Output) error {
	if res.Status >= 300 {
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(res.Body))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(key), "sitemap") {
			continue
		}
		if req, err := res.Follow(strings.TrimSpace(val), spiders.SitemapCallback); err == nil {
			req.Depth = res.Depth() // sitemaps do not count as depth
			out.Follow(req)
		}
	}
	return nil
}

// sitemapDoc is a sitemap (urlset) or a sitemap index.
type sitemapDoc struct {
	XMLName  xml.Name
	URLs     []sitemapLoc `xml:"url"`
	Sitemaps []sitemapLoc `xml:"sitemap"`
}

type sitemapLoc struct {
	Loc string `xml:"loc"`
}

// parseSitemap requests every page of a sitemap (parsed by "parse") and every sitemap of
// a sitemap index. Gzipped sitemaps are recognised by their magic bytes.
func parseSitemap(_ context.Context, res *spiders.Response, out *spiders.Output) error {
	body := res.Body
	if len(body) > 2 && body[0] == 0x1f && body[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("%w: handlers: sitemap %s: %w", errSpiderInput, spiders.RedactedURL(res.URL), err)
		}
		body, err = io.ReadAll(io.LimitReader(zr, maxSitemapBytes))
		if err != nil {
			return fmt.Errorf("%w: handlers: sitemap %s: %w", errSpiderInput, spiders.RedactedURL(res.URL), err)
		}
	}
	var doc sitemapDoc
	if err := xml.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("%w: handlers: sitemap %s: %w", errSpiderInput, spiders.RedactedURL(res.URL), err)
	}
	follow := func(loc, callback string, depth int) {
		if req, err := res.Follow(strings.TrimSpace(loc), callback); err == nil {
			req.Depth = depth
			out.Follow(req)
		}
	}
	for _, s := range doc.Sitemaps {
		follow(s.Loc, spiders.SitemapCallback, res.Depth())
	}
	for _, u := range doc.URLs {
		follow(u.Loc, spiders.DefaultCallback, res.Depth()+1)
	}
	return nil
}
