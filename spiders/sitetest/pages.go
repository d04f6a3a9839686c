package sitetest

import (
	"html"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// authorHTML are the escaped author names.
var authorHTML = func() []string {
	out := make([]string, len(authors))
	for i, a := range authors {
		out[i] = html.EscapeString(a.name)
	}
	return out
}()

// home writes the front page: latest articles, every archive month (relative links),
// the tag cloud, the feed, a removed (404) article and the drafts (robots-disallowed).
func (s *Site) home(p *page) {
	c := s.c
	s.head(p, "Front page", "/")
	p.S("<h1>Latest</h1>\n<ul class=\"teasers\">\n")
	for id := c.n; id > max(0, c.n-latest); id-- {
		s.teaser(p, id)
	}
	p.S("</ul>\n<h2>Archive</h2>\n<ul class=\"months\">\n")
	for m := c.months - 1; m >= 0; m-- {
		y, mo := c.yearMonth(m)
		p.S(`<li><a href="`, c.archivePath(m)[1:], `">`, monthNames[mo-1], " ")
		p.I(y)
		p.S("</a></li>\n")
	}
	p.S("</ul>\n<h2>Tags</h2>\n<p class=\"tags\">\n")
	for _, t := range tags {
		p.S(`<a href="/tag/`, t, `">`, t, "</a>\n")
	}
	p.S("</p>\n<p>Subscribe to the <a href=\"/feed.xml\">RSS feed</a>. The post <a href=\"/article/removed-post\">Why we removed a post</a> is gone.</p>\n",
		"<p class=\"staff\"><a href=\"/drafts/upcoming\">Upcoming drafts</a></p>\n")
	s.foot(p)
}

var monthNames = []string{"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"}

// article writes article id: one <article> with h1, author, time and body, then
// links to the previous and next article, its tags and two search pages whose query
// parameters come in an order that depends on the article.
func (s *Site) article(p *page, id int) {
	c := s.c
	a := c.author[id]
	s.head(p, c.titles[id], c.urls[id])
	p.S("<p class=\"crumbs\"><a href=\"../", c.archivePath(c.month[id])[1:], "\">Archive</a></p>\n<article>\n<h1>", c.titles[id],
		"</h1>\n<p class=\"byline\">By <a rel=\"author\" class=\"author\" href=\"/author/", authors[a].slug, `">`, authorHTML[a],
		"</a> on <time datetime=\"", c.dates[id], `">`, c.dates[id], "</time> &middot; <a href=\"#comments\">Comments</a></p>\n")
	for j := 0; j < bodyParas; j++ {
		p.S("<p>", c.paras[sitekit.Pick(id, 10+j, len(c.paras))], "</p>\n")
	}
	p.S("<p class=\"tags\">")
	for _, t := range c.tagsOf[id] {
		p.S(`<a href="/tag/`, tags[t], `">`, tags[t], "</a> ")
	}
	p.S("</p>\n</article>\n<nav class=\"chain\">\n")
	if id > 1 {
		p.S(`<a rel="prev" href="`, c.urls[id-1], "\">Previous article</a>\n")
	}
	if id < c.n {
		p.S(`<a rel="next" href="`)
		p.O()
		p.S(c.urls[id+1], "\">Next article</a>\n")
	}
	p.S("</nav>\n<section id=\"comments\"><h2>Comments</h2><p>Comments are closed.</p></section>\n<p class=\"more\">More: ")
	t1, t2 := tags[c.tagsOf[id][0]], tags[c.tagsOf[id][1]]
	searchLink(p, t1, "date", sitekit.Pick(id, 8, 2) == 0)
	searchLink(p, t2, "title", sitekit.Pick(id, 9, 2) == 0)
	p.S("</p>\n")
	s.foot(p)
}

// searchLink links /search for tag t sorted by sort, with q first or sort first.
func searchLink(p *page, t, sort string, qFirst bool) {
	if qFirst {
		p.S(`<a href="/search?q=`, t, `&amp;sort=`, sort, `">`)
	} else {
		p.S(`<a href="/search?sort=`, sort, `&amp;q=`, t, `">`)
	}
	p.S(t, " by ", sort, "</a> ")
}

// listing writes page n of a paged list of articles (archive, author or tag), newest first.
func (s *Site) listing(p *page, title, base string, ids []int, n int, extra func(*page)) {
	pages := pagesOf(len(ids))
	canonical := base
	if n > 1 {
		canonical += "?page=" + itoa(n)
		title += " (page " + itoa(n) + ")"
	}
	s.head(p, title, canonical)
	p.S("<h1>", title, "</h1>\n")
	if extra != nil {
		extra(p)
	}
	p.S("<ul class=\"teasers\">\n")
	for i := (n - 1) * perPage; i < min(n*perPage, len(ids)); i++ {
		s.teaser(p, ids[len(ids)-1-i])
	}
	p.S("</ul>\n")
	pager(p, base, n, pages)
	s.foot(p)
}

// search writes the top results for tag t sorted by "date" (newest first) or "title".
func (s *Site) search(p *page, t int, by string) {
	c := s.c
	top := c.byTitle[t]
	if by == "date" {
		top = c.byDate[t]
	}
	s.head(p, "Search: "+tags[t], "/search?q="+tags[t]+"&amp;sort="+by)
	p.S("<h1>Results for ", tags[t], "</h1>\n<p>Sort by ")
	other := "title"
	if by == "title" {
		other = "date"
	}
	searchLink(p, tags[t], other, by == "date")
	p.S("</p>\n<ul class=\"teasers\">\n")
	for _, id := range top {
		s.teaser(p, id)
	}
	p.S("</ul>\n")
	s.foot(p)
}

// about writes the static about page.
func (s *Site) about(p *page) {
	s.head(p, "About", "/about")
	p.S("<h1>About</h1>\n<p>The Test Gazette is a deterministic site for crawler tests.</p>\n")
	s.foot(p)
}

// draft writes the page under /drafts/ (disallowed by robots.txt).
func (s *Site) draft(p *page) {
	s.head(p, "Upcoming drafts", "")
	p.S("<h1>Upcoming drafts</h1>\n<p>Disallowed by robots.txt.</p>\n")
	s.foot(p)
}
