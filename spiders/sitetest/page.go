package sitetest

import (
	"strconv"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// page is the answer being written (see sitekit.Page).
type page = sitekit.Page

func itoa(n int) string { return strconv.Itoa(n) }

const css = `<style>
body{margin:0;font:17px/1.6 Georgia,"Times New Roman",serif;color:#222;background:#fff}
a{color:#0b5cad}header.masthead{border-bottom:3px double #222;padding:18px 40px}
.masthead .name{font-size:30px;font-weight:700;color:#222;text-decoration:none}
nav.sections ul{display:flex;gap:16px;list-style:none;margin:0;padding:8px 40px;border-bottom:1px solid #ddd;font:14px system-ui,sans-serif}
.wrap{display:grid;grid-template-columns:3fr 1fr;gap:40px;max-width:1100px;margin:0 auto;padding:24px 40px}
article h1{font-size:36px;line-height:1.2;margin:0 0 8px}.byline{color:#666;font:14px system-ui,sans-serif}
.teasers{list-style:none;padding:0}.teaser{border-bottom:1px solid #eee;padding:10px 0}.teaser .when{color:#888;font-size:13px}
.pager{display:flex;gap:8px;list-style:none;padding:0}.tags a{background:#f2f2f2;padding:2px 8px;border-radius:10px;font-size:13px}
aside{font:14px system-ui,sans-serif}aside ul{list-style:none;padding:0}footer{border-top:1px solid #ddd;padding:24px 40px;color:#666;font-size:13px}
</style>
`

// head writes the document head, masthead and section nav, and opens the main column.
func (s *Site) head(p *page, title, canonical string) {
	p.S("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", title, " &mdash; The Test Gazette</title>\n")
	if canonical != "" {
		p.S(`<link rel="canonical" href="`)
		p.O()
		p.S(canonical, "\">\n")
	}
	p.S(`<link rel="alternate" type="application/rss+xml" href="/feed.xml">`, "\n", css, "</head>\n<body>\n<header class=\"masthead\"><a class=\"name\" href=\"")
	p.O()
	p.S("/\">The Test Gazette</a></header>\n<nav class=\"sections\"><ul>\n<li><a href=\"/\">Front page</a></li>\n<li><a href=\"",
		s.c.archivePath(s.c.months-1), "\">Latest</a></li>\n")
	for _, t := range tags[:6] {
		p.S(`<li><a href="/tag/`, t, `">`, t, "</a></li>\n")
	}
	p.S("<li><a href=\"/about\">About</a></li>\n</ul></nav>\n<div class=\"wrap\">\n<main>\n")
}

// foot closes the main column and writes the sidebar and footer.
func (s *Site) foot(p *page) {
	p.S("</main>\n<aside>\n<h3>Authors</h3>\n<ul>\n")
	for i, a := range authors {
		p.S(`<li><a href="/author/`, a.slug, `">`, authorHTML[i], "</a></li>\n")
	}
	p.S("</ul>\n</aside>\n</div>\n<footer>\n<p><a href=\"#\">Top</a> &middot; <a href=\"")
	p.O()
	p.S("/about\">About</a> &middot; <a href=\"mailto:letters@example.com\">Letters</a> &middot; ",
		"<a href=\"https://example.net/syndication\">Syndication</a> &middot; <a href=\"http://www.example.org/press?from=gazette\">Press</a></p>\n",
		"<p>The Test Gazette is generated for crawler tests. None of it is news.</p>\n</footer>\n</body>\n</html>\n")
}

// teaser writes a list entry for article id: its title linked, author and date.
func (s *Site) teaser(p *page, id int) {
	c := s.c
	p.S(`<li class="teaser"><a href="`, c.urls[id], `">`, c.titles[id], `</a> <span class="when">`, c.dates[id],
		`</span> by <a href="/author/`, authors[c.author[id]].slug, `">`, authorHTML[c.author[id]], "</a></li>\n")
}

// pager writes links to the pages around page n of a listing at base with pages pages.
func pager(p *page, base string, n, pages int) {
	p.S("<ul class=\"pager\">\n")
	if n > 1 {
		p.PageLink(base, n-1, "Newer")
	}
	for m := max(1, n-2); m <= min(pages, n+2); m++ {
		if m != n {
			p.PageLink(base, m, itoa(m))
		}
	}
	if n < pages {
		p.PageLink(base, n+1, "Older")
		p.PageLink(base, pages, "Oldest")
	}
	p.S("</ul>\n")
}
