package datasite

import "net/http"

// Paths of the pages.
const (
	ProductPath = "/shop/handmuehle-walnuss"
	APIPath     = "/std/vec/struct.Vec.html"
)

// Site serves the pages. Its zero value is ready to use.
type Site struct{}

// New returns a Site.
func New() *Site { return &Site{} }

// ServeHTTP answers /, ProductPath and APIPath with their pages, anything else with 404.
func (*Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var page string
	switch r.URL.Path {
	case "/":
		page = indexPage
	case ProductPath:
		page = productPage
	case APIPath:
		page = apiPage
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(page))
}

const indexPage = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Data site</title></head>
<body><ul>
<li><a href="/shop/handmuehle-walnuss">Handmühle Walnuss</a></li>
<li><a href="/std/vec/struct.Vec.html">std::vec::Vec</a></li>
</ul></body></html>
`

// productPage has JSON-LD in three scripts (an @graph; one not valid JSON, which a
// reader skips; one inside an HTML comment), microdata, and the visible fields. Its
// <base href> makes relative links resolve under /shop/.
const productPage = `<!DOCTYPE html>
<html lang="de"><head><meta charset="utf-8">
<title>Handmühle Walnuss – Kaffeehaus</title>
<base href="/shop/">
<script type="application/ld+json">
{"@context": "https://schema.org", "@graph": [
  {"@type": "WebSite", "name": "Kaffeehaus", "url": "https://kaffeehaus.example/"},
  {"@type": "BreadcrumbList", "itemListElement": [
    {"@type": "ListItem", "position": 1, "name": "Mühlen"},
    {"@type": "ListItem", "position": 2, "name": "Handmühlen"}]},
  {"@type": "Product", "name": "Handmühle Walnuss", "sku": "HM-1299", "gtin13": "4006381333931",
   "image": ["https://kaffeehaus.example/img/hm-1.jpg", "https://kaffeehaus.example/img/hm-2.jpg"],
   "brand": {"@type": "Brand", "name": "Mahlwerk"},
   "aggregateRating": {"@type": "AggregateRating", "ratingValue": "4.6", "reviewCount": "128"},
   "offers": [
     {"@type": "Offer", "sku": "HM-1299-S", "price": "1299.00", "priceCurrency": "EUR", "availability": "https://schema.org/InStock"},
     {"@type": "Offer", "sku": "HM-1299-L", "price": 1499, "priceCurrency": "EUR", "availability": "https://schema.org/OutOfStock"}]}
]}
</script>
<script type="application/ld+json">{"@type": "Organization", "name": not json}</script>
<script type="application/ld+json"><!--
{"@context": "https://schema.org", "@type": "Organization", "name": "Kaffeehaus GmbH"}
--></script>
</head>
<body class="shop product-page">
<nav class="crumbs"><a href="/">Start</a> &rsaquo; <a href="/c/muehlen">Mühlen</a></nav>
<div class="artikel" itemscope itemtype="https://schema.org/Product">
  <h1 itemprop="name">Handmühle
      Walnuss</h1>
  <img itemprop="image" src="img/hm-1.jpg" alt="Handmühle">
  <p class="preis" itemprop="offers" itemscope itemtype="https://schema.org/Offer">
    <span class="betrag">1.299,00&nbsp;€</span>
    <meta itemprop="price" content="1299.00"><meta itemprop="priceCurrency" content="EUR">
    <link itemprop="availability" href="https://schema.org/InStock">
  </p>
  <div itemprop="aggregateRating" itemscope itemtype="https://schema.org/AggregateRating">
    <span itemprop="ratingValue">4,6</span> von 5 (<span itemprop="reviewCount">128</span> Bewertungen)
  </div>
  <p class="nummer">Artikelnummer: <span>HM-1299</span></p>
  <p class="schlagworte">Schlagwörter: Kaffee, Mühle,  Handarbeit , </p>
  <ul class="tags"><li><a href="/t/kaffee">Kaffee</a></li><li><a href="/t/muehle">Mühle</a></li><li><a href="/t/holz">Holz</a></li></ul>
  <table class="varianten">
    <tr><th>Artikel</th><th>Größe</th><th>Preis</th><th></th></tr>
    <tr data-sku="HM-1299-S"><td>Handmühle S</td><td>S</td><td>1.299,00 €</td><td><a href="varianten/s">ansehen</a></td></tr>
    <tr data-sku="HM-1299-L"><td>Handmühle L</td><td>L</td><td>1.499,00 €</td><td><a href="varianten/l">ansehen</a></td></tr>
  </table>
</div>
</body></html>
`

// apiPage is a rustdoc page as the issue describes it: the kind of item only in the
// body's class, the path inside a heading that starts with the kind.
const apiPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Vec in std::vec - Rust</title></head>
<body class="rustdoc struct"><main>
<div class="main-heading"><h1>Struct <a class="mod" href="../index.html">std</a>::<wbr><a class="mod" href="index.html">vec</a>::<wbr><a class="struct" href="#">Vec</a><button id="copy-path" title="Copy item path to clipboard"></button></h1>
<span class="out-of-band"><a class="src" href="../../src/alloc/vec/mod.rs.html#397">Source</a></span></div>
<pre class="rust item-decl"><code>pub struct Vec&lt;T, A = Global&gt; { /* private fields */ }</code></pre>
<details class="toggle top-doc" open><div class="docblock"><p>A contiguous growable array type, written as <code>Vec&lt;T&gt;</code>, short for ‘vector’.</p></div></details>
<h2 id="implementations" class="section-header">Implementations</h2>
<div class="impl-items">
<section id="method.new" class="method"><h4 class="code-header">pub const fn <a href="#method.new" class="fn">new</a>() -&gt; Vec&lt;T&gt;</h4></section>
<section id="method.with_capacity" class="method"><h4 class="code-header">pub fn <a href="#method.with_capacity" class="fn">with_capacity</a>(capacity: usize) -&gt; Vec&lt;T&gt;</h4></section>
<section id="method.push" class="method"><h4 class="code-header">pub fn <a href="#method.push" class="fn">push</a>(&amp;mut self, value: T)</h4></section>
</div>
</main></body></html>
`
