package demosite

import "github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"

// home writes the home page: category tiles, featured products (four of them through a
// tracking-parameter link), the feed, a discontinued (404) product, a private link and
// the peers (SetPeers).
func (s *Site) home(p *page) {
	c := s.cat
	s.head(p, "Home", "Furniture, kitchen and garden goods from the Streamcrawl demo shop.", "/")
	p.S("<section class=\"hero\"><h1>Welcome to the Demo Shop</h1><p>Everything on this site is generated, deterministic and safe to crawl.</p></section>\n",
		"<h2>Shop by category</h2>\n<ul class=\"grid categories\">\n")
	for _, cat := range c.cats {
		p.S(`<li class="card"><a href="/c/`, cat.slug, `"><img src="/static/`, cat.slug, `.jpg" alt=""></a> <a class="card-title" href="c/`,
			cat.slug, `">`, cat.name, "</a></li>\n")
	}
	p.S("</ul>\n<h2>Featured</h2>\n<ul class=\"grid featured\">\n")
	for id := 1; id <= min(featured, c.nProducts); id++ {
		p.S(`<li class="card"><a class="card-title" href="/p/`)
		p.I(id)
		if id <= 4 {
			p.S(`?utm_source=home&amp;utm_medium=banner`)
		}
		p.S(`">`, c.escNames[id], `</a> <span class="card-price">`, c.prices[id], "</span></li>\n")
	}
	p.S("</ul>\n<section class=\"notices\">\n",
		"<p>Looking for the <a href=\"/p/999999\">Vintage Brass Lamp</a>? It has been discontinued.</p>\n",
		"<p>Developers: our catalogue is also available as a <a href=\"/feed.json\">JSON feed</a>.</p>\n",
		"<p class=\"staff\"><a href=\"/private/x\">Staff area</a></p>\n",
		"</section>\n")
	s.peerLinks(p)
	s.foot(p)
}

// category writes listing page n (1-based) of category k: breadcrumbs, a grid of
// product cards and pagination. The first page of a category links a 404 guide, and
// the first page of the first three categories links a page that answers 500.
func (s *Site) category(p *page, k, n int) {
	c := s.cat
	cat := c.cats[k]
	pages := c.categoryPages(k)
	base := "/c/" + cat.slug
	canonical := base
	title := cat.name
	if n > 1 {
		canonical += "?page=" + itoa(n)
		title += " - page " + itoa(n)
	}
	s.head(p, title, "Browse "+cat.name+" products at the Streamcrawl demo shop.", canonical)
	p.S("<ol class=\"breadcrumbs\"><li><a href=\"/\">Home</a></li><li><a href=\"/c/", cat.slug, `">`, cat.name, "</a></li></ol>\n<h1>", cat.name, "</h1>\n")
	if n == 1 {
		p.S(`<p class="promo"><a href="/missing/`, cat.slug, `-gift-guide">Read our `, cat.name, " gift guide</a></p>\n")
		if k < 3 {
			p.S(`<p class="promo"><a href="/flaky/`)
			p.I(k + 1)
			p.S("\">Today's deals (beta)</a></p>\n")
		}
	}
	p.S("<ul class=\"grid products\">\n")
	for i := (n - 1) * perPage; i < min(n*perPage, c.inCategory(k)); i++ {
		s.card(p, c.nthInCategory(k, i))
	}
	p.S("</ul>\n<ul class=\"pagination\">\n")
	if n > 1 {
		p.PageLink(base, n-1, "&laquo; Previous")
		p.PageLink(base, 1, "First")
	}
	for m := max(1, n-2); m <= min(pages, n+2); m++ {
		if m == n {
			p.S("<li><span>")
			p.I(m)
			p.S("</span></li>\n")
			continue
		}
		p.PageLink(base, m, itoa(m))
	}
	if n < pages {
		p.PageLink(base, pages, "Last")
		p.PageLink(base, n+1, "Next &raquo;")
	}
	p.S("</ul>\n")
	s.foot(p)
}

// product writes the page of product id. Its related products are linked in every
// form: relative ("18"), absolute, root-relative with a fragment, and for products
// with id%10==3 through a tracking parameter.
func (s *Site) product(p *page, id int) {
	c := s.cat
	k := c.category(id)
	cat := c.cats[k]
	name := c.escNames[id]
	s.head(p, name, name+" - "+cat.name+" at the Streamcrawl demo shop.", c.productURLs[id])
	p.S("<ol class=\"breadcrumbs\"><li><a href=\"/\">Home</a></li><li><a href=\"../c/", cat.slug, `">`, cat.name, "</a></li><li>", name, "</li></ol>\n",
		"<div class=\"product\">\n<div class=\"gallery\"><img src=\"/img/")
	p.I(id)
	p.S(`.png" alt="`, name, `" width="400" height="400">`)
	if id%imageEvery == 1 {
		p.S(` <a class="zoom" href="/img/`)
		p.I(id)
		p.S(`.png">View full-size image</a>`)
	}
	p.S("</div>\n<div class=\"details\">\n<h1 class=\"product-name\">", name, "</h1>\n<p class=\"pricing\"><span class=\"price\">", c.prices[id],
		"</span><span class=\"stock\">In stock</span></p>\n<p class=\"meta\">Item number: <span class=\"sku\">", c.skus[id],
		"</span> &middot; <a href=\"#reviews\">Read reviews</a></p>\n<div class=\"description\">\n")
	for j := 0; j < descParas; j++ {
		p.S("<p>", c.paragraphs[sitekit.Pick(id, 10+j, len(c.paragraphs))], "</p>\n")
	}
	p.S("</div>\n<table class=\"specs\">\n<tr><th>Material</th><td>", materials[sitekit.Pick(id, 2, len(materials))],
		"</td></tr>\n<tr><th>Width</th><td>")
	p.I(10 + sitekit.Pick(id, 20, 90))
	p.S(" cm</td></tr>\n<tr><th>Height</th><td>")
	p.I(5 + sitekit.Pick(id, 21, 120))
	p.S(" cm</td></tr>\n<tr><th>Weight</th><td>")
	p.I(1 + sitekit.Pick(id, 22, 25))
	p.S(" kg</td></tr>\n<tr><th>Warranty</th><td>2 years</td></tr>\n<tr><th>Care</th><td>Wipe with a dry cloth</td></tr>\n</table>\n",
		"<p><a href=\"/c/", cat.slug, `">Back to `, cat.name, "</a></p>\n</div>\n</div>\n<section id=\"reviews\">\n<h2>Reviews</h2>\n")
	for j := 0; j < 4; j++ {
		p.S(`<div class="review"><p class="stars">`, stars[sitekit.Pick(id, 30+j, len(stars))], `</p><p>`, c.reviews[sitekit.Pick(id, 40+j, len(c.reviews))],
			`</p><p class="by">`, reviewers[sitekit.Pick(id, 50+j, len(reviewers))], "</p></div>\n")
	}
	p.S("</section>\n<section class=\"related\">\n<h2>You may also like</h2>\n<ul class=\"grid\">\n")
	for j, r := range c.related(id) {
		p.S(`<li class="card"><a href="`)
		switch {
		case j == 0 && r%trackingEvery == trackingRem:
			p.S("/p/")
			p.I(r)
			p.S("?utm_source=related")
		case j == 0:
			p.I(r) // relative to /p/<id>
		case j == 1:
			productHref(p, r, 1)
		case j == 2:
			productHref(p, r, 0)
		default:
			productHref(p, r, 0)
			p.S("#reviews")
		}
		p.S(`">`, c.escNames[r], `</a> <span class="related-price">`, c.prices[r], "</span></li>\n")
	}
	p.S("</ul>\n</section>\n")
	s.foot(p)
}

var stars = []string{"&#9733;&#9733;&#9733;&#9733;&#9733;", "&#9733;&#9733;&#9733;&#9733;&#9734;", "&#9733;&#9733;&#9733;&#9734;&#9734;"}

// private writes a page under /private/ (disallowed by robots.txt).
func (s *Site) private(p *page, title string) {
	s.head(p, title, "Staff only.", "")
	p.S("<h1>", title, "</h1>\n<p>This area is disallowed by robots.txt; polite crawlers never see it.</p>\n",
		"<p><a href=\"/private/offers\">Staff offers</a></p>\n")
	s.foot(p)
}
