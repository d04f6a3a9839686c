package demosite

import (
	"strconv"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// page appends one HTML page to a byte slice; origin ("http://host:port") is written
// wherever the page needs an absolute link.
type page struct {
	b      []byte
	origin string
}

func (p *page) s(parts ...string) {
	for _, s := range parts {
		p.b = append(p.b, s...)
	}
}

func (p *page) i(n int) { p.b = strconv.AppendInt(p.b, int64(n), 10) }

// o writes the origin.
func (p *page) o() { p.b = append(p.b, p.origin...) }

// productHref writes a link target for product id in the given form: 0 root-relative,
// 1 absolute.
func (p *page) productHref(id, form int) {
	if form == 1 {
		p.o()
	}
	p.s("/p/")
	p.i(id)
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
	p.s("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", title,
		" | Streamcrawl Demo Shop</title>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"description\" content=\"",
		description, "\">\n")
	if canonical != "" {
		p.s(`<link rel="canonical" href="`)
		p.o()
		p.s(canonical, "\">\n")
	}
	p.s(`<link rel="stylesheet" href="/static/shop.css">`, "\n", css,
		"</head>\n<body id=\"top\">\n<header class=\"site-header\">\n<a class=\"logo\" href=\"")
	p.o()
	p.s("/\">Demo Shop</a>\n<form class=\"search\" action=\"/search\" method=\"get\"><input type=\"search\" name=\"q\" placeholder=\"Search products\"></form>\n</header>\n",
		"<nav class=\"main-nav\" aria-label=\"Categories\">\n<ul>\n<li><a href=\"/\">Home</a></li>\n")
	for _, c := range s.cat.cats {
		p.s(`<li><a href="/c/`, c.slug, `">`, c.name, "</a></li>\n")
	}
	p.s("</ul>\n</nav>\n<main>\n")
}

// foot closes main and writes the footer, which has offsite, mailto and fragment links.
func (s *Site) foot(p *page) {
	p.s("</main>\n<footer class=\"site-footer\">\n<div class=\"cols\">\n<div><h3>Shop</h3><ul>\n<li><a href=\"")
	p.o()
	p.s("/\">Home</a></li>\n")
	for i, c := range s.cat.cats {
		if i == 4 {
			break
		}
		p.s(`<li><a href="`)
		p.o()
		p.s(`/c/`, c.slug, `">`, c.name, "</a></li>\n")
	}
	p.s("</ul></div>\n",
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
	p.s(`<li class="card"><a href="/p/`)
	p.i(id)
	p.s(`"><img src="/img/`)
	p.i(id)
	p.s(`.png" alt="`, c.escNames[id], `" width="200" height="200" loading="lazy"></a>`, "\n", `<a class="card-title" href="`)
	p.productHref(id, 1)
	p.s(`">`, c.escNames[id], `</a> <span class="card-price">`, c.prices[id], `</span>`, "\n", `<span class="card-rating" aria-label="Customer rating">`,
		stars[sitekit.Pick(id, 30, len(stars))], `</span> <span class="card-ship">Ships in `)
	p.i(1 + sitekit.Pick(id, 23, 5))
	p.s(" days</span></li>\n")
}
