package demosite

import "github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"

// page is the answer being written (see sitekit.Page).
type page = sitekit.Page

// productHref writes a link target for product id in the given form: 0 root-relative,
// 1 absolute.
func productHref(p *page, id, form int) {
	if form == 1 {
		p.O()
	}
	p.S("/p/")
	p.I(id)
}

const css = `<style>
:root{--ink:#1d2430;--muted:#5b6473;--accent:#c2410c;--bg:#fbfaf7;--card:#ffffff;--line:#e6e2da}
*{box-sizing:border-box}body{margin:0;font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--ink);background:var(--bg)}
a{color:inherit;text-decoration:none}a:hover{text-decoration:underline}
.site-header{display:flex;align-items:center;justify-content:space-between;padding:14px 32px;background:#fff;border-bottom:1px solid var(--line)}
.logo{font-weight:700;font-size:22px;letter-spacing:.5px}.search input{padding:6px 10px;border:1px solid var(--line);border-radius:6px;width:260px}
.main-nav ul{display:flex;flex-wrap:wrap;gap:18px;list-style:none;margin:0;padding:10px 32px;background:#fff;border-bottom:1px solid var(--line)}
.main-nav a{color:var(--muted);font-size:14px;text-transform:uppercase;letter-spacing:.8px}
main{max-width:1120px;margin:0 auto;padding:24px 32px}
.breadcrumbs{display:flex;gap:8px;list-style:none;padding:0;color:var(--muted);font-size:14px}.breadcrumbs li+li:before{content:"/";margin-right:8px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(200px,1fr));gap:20px;list-style:none;padding:0}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px}.card img{width:100%;height:auto;border-radius:6px}
.card-title{display:block;font-weight:600;margin-top:8px}.card-price{color:var(--accent);font-weight:600}
.product{display:grid;grid-template-columns:1fr 1fr;gap:32px}.product img{width:100%;border-radius:12px}
.product-name{font-size:32px;margin:0 0 8px}.price{font-size:24px;color:var(--accent);font-weight:700}.stock{color:#15803d;margin-left:12px}
.description p{margin:0 0 12px;color:#2f3744}.specs{border-collapse:collapse;width:100%;margin:16px 0}.specs td,.specs th{border-bottom:1px solid var(--line);padding:6px 8px;text-align:left}
#reviews{margin-top:32px}.review{border-top:1px solid var(--line);padding:12px 0}.stars{color:#eab308}
.pagination{display:flex;gap:10px;list-style:none;padding:0;margin:24px 0}.pagination a,.pagination span{padding:4px 10px;border:1px solid var(--line);border-radius:6px}
.site-footer{margin-top:48px;padding:32px;background:#1d2430;color:#cbd2dc;font-size:14px}.site-footer .cols{display:grid;grid-template-columns:repeat(4,1fr);gap:24px}
.site-footer h3{color:#fff;font-size:13px;text-transform:uppercase;letter-spacing:1px}.site-footer ul{list-style:none;padding:0;margin:0}.site-footer li{margin:4px 0}
@media (max-width:720px){.product{grid-template-columns:1fr}.site-footer .cols{grid-template-columns:1fr 1fr}.search input{width:140px}}
</style>
`

// head writes the document head and the site header and nav bar. canonical is a path
// or "" for none.
func (s *Site) head(p *page, title, description, canonical string) {
	p.S("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", title,
		" | Streamcrawl Demo Shop</title>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"description\" content=\"",
		description, "\">\n")
	if canonical != "" {
		p.S(`<link rel="canonical" href="`)
		p.O()
		p.S(canonical, "\">\n")
	}
	p.S(`<link rel="stylesheet" href="/static/shop.css">`, "\n", css,
		"</head>\n<body id=\"top\">\n<header class=\"site-header\">\n<a class=\"logo\" href=\"")
	p.O()
	p.S("/\">Demo Shop</a>\n<form class=\"search\" action=\"/search\" method=\"get\"><input type=\"search\" name=\"q\" placeholder=\"Search products\"></form>\n</header>\n",
		"<nav class=\"main-nav\" aria-label=\"Categories\">\n<ul>\n<li><a href=\"/\">Home</a></li>\n")
	for _, c := range s.cat.cats {
		p.S(`<li><a href="/c/`, c.slug, `">`, c.name, "</a></li>\n")
	}
	p.S("</ul>\n</nav>\n<main>\n")
}

// foot writes SetPageSize's filler, if any, then closes main and writes the footer.
func (s *Site) foot(p *page) {
	s.pad(p)
	s.foot0(p)
}

// foot0 closes main and writes the footer, which has offsite, mailto and fragment links.
func (s *Site) foot0(p *page) {
	p.S("</main>\n<footer class=\"site-footer\">\n<div class=\"cols\">\n<div><h3>Shop</h3><ul>\n<li><a href=\"")
	p.O()
	p.S("/\">Home</a></li>\n")
	for i, c := range s.cat.cats {
		if i == 4 {
			break
		}
		p.S(`<li><a href="`)
		p.O()
		p.S(`/c/`, c.slug, `">`, c.name, "</a></li>\n")
	}
	p.S("</ul></div>\n",
		"<div><h3>Company</h3><ul>\n",
		"<li><a href=\"http://example.com/about\">About us</a></li>\n",
		"<li><a href=\"https://example.com/careers?ref=demo-shop\">Careers</a></li>\n",
		"<li><a href=\"http://blog.example.org/\">Our blog</a></li>\n",
		"</ul></div>\n",
		"<div><h3>Help</h3><ul>\n",
		"<li><a href=\"https://help.example.com/shipping\">Shipping</a></li>\n",
		"<li><a href=\"https://help.example.com/returns\">Returns</a></li>\n",
		"<li><a href=\"mailto:support@example.com\">support@example.com</a></li>\n",
		"</ul></div>\n",
		"<div><h3>Follow</h3><ul>\n",
		"<li><a href=\"https://social.example.net/demoshop\" rel=\"nofollow noopener\">Social</a></li>\n",
		"<li><a href=\"#top\">Back to top</a></li>\n",
		"</ul></div>\n</div>\n",
		"<p class=\"legal\">&copy; Streamcrawl Demo Shop. A generated site for testing crawlers; every product here is made up.</p>\n",
		"</footer>\n</body>\n</html>\n")
}

// card writes a product card: the product is linked twice (image and title, one
// root-relative and one absolute).
func (s *Site) card(p *page, id int) {
	c := s.cat
	p.S(`<li class="card"><a href="/p/`)
	p.I(id)
	p.S(`"><img src="/img/`)
	p.I(id)
	p.S(`.png" alt="`, c.escNames[id], `" width="200" height="200" loading="lazy"></a>`, "\n", `<a class="card-title" href="`)
	productHref(p, id, 1)
	p.S(`">`, c.escNames[id], `</a> <span class="card-price">`, c.prices[id], `</span>`, "\n", `<span class="card-rating" aria-label="Customer rating">`,
		stars[sitekit.Pick(id, 30, len(stars))], `</span> <span class="card-ship">Ships in `)
	p.I(1 + sitekit.Pick(id, 23, 5))
	p.S(" days</span></li>\n")
}
