package demosite

import (
	"fmt"
	"html"
	"strings"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// Product is a product page of the site as a correct crawl scrapes it.
type Product struct {
	// ID is the product number; its page is /p/<ID>.
	ID int
	// URL is the canonical path of the product page, e.g. /p/17.
	URL string
	// Name is the product name as text (entities decoded), e.g. "Salt & Pepper Mill".
	Name string
	// Price is the price as shown, e.g. "$12.34".
	Price string
	// SKU is the stock keeping unit as shown, e.g. "SKU-00017".
	SKU string
}

// category is one product category: its slug (/c/<slug>) and display name.
type category struct {
	slug, name string
}

var categories = []category{
	{"kitchen", "Kitchen"}, {"garden", "Garden"}, {"office", "Office"},
	{"outdoor", "Outdoor"}, {"bedroom", "Bedroom"}, {"bathroom", "Bathroom"},
	{"lighting", "Lighting"}, {"storage", "Storage"}, {"textiles", "Textiles"},
	{"tools", "Tools"}, {"toys", "Toys"}, {"pets", "Pets"},
}

var (
	adjectives = []string{"Classic", "Compact", "Deluxe", "Rustic", "Modern", "Vintage",
		"Nordic", "Everyday", "Premium", "Handmade", "Folding", "Stackable", "Cordless",
		"Heavy-Duty", "Minimal", "Coastal", "Urban", "Alpine", "Quiet", "Bright"}
	materials = []string{"Oak", "Walnut", "Bamboo", "Steel", "Copper", "Linen", "Wool",
		"Ceramic", "Glass", "Cotton", "Marble", "Cast Iron"}
	nouns = []string{"Desk Lamp", "Salt & Pepper Mill", "Chef's Knife", "Planter",
		"Bookshelf", "Throw Blanket", "Cutting Board", "Watering Can", "Side Table",
		"Wall Clock", "Storage Box", "Doormat", "Pet Bed", "Toolbox", "Kettle", "Mirror",
		"Garden Bench", "Pillow Cover", "Shower Caddy", "Lantern", "Desk Organizer",
		"Spice Rack", "Coat Hook", "Serving Tray"}
	words = strings.Fields(`the a this our every crafted built designed made finished
		sturdy light durable simple elegant practical warm natural smooth solid soft
		quality detail piece home room kitchen garden table shelf corner morning evening
		season family guests years daily use care clean wipe store fold stack carry hang
		place fits holds keeps brings adds gives lasts works looks feels stays grows
		with for and of in on by to from under over beside around without through
		small large tall wide deep round square oval matte polished brushed oiled woven
		hand local recycled tested packed shipped returned loved chosen gentle bold calm
		quietly easily gently carefully neatly perfectly nicely truly simply always never`)
	reviewers = []string{"Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Gus", "Hana",
		"Ivan", "Jo", "Kemal", "Lena", "Marta", "Noor", "Olu", "Pia"}
)

// catalog is the generated content of a site: products and text pools.
type catalog struct {
	nProducts   int
	cats        []category
	names       []string // names[id] is the display name (unescaped); names[0] unused
	paragraphs  []string // HTML-safe description paragraphs
	reviews     []string // HTML-safe review texts
	productURLs []string // productURLs[id] = "/p/<id>"
	escNames    []string // HTML-escaped names
	prices      []string
	skus        []string
}

// Sizing constants.
const (
	perPage       = 20 // products per category page
	nParagraphs   = 128
	nReviews      = 64
	descParas     = 14 // paragraphs per product description
	trackingEvery = 10
	trackingRem   = 3         // products with id%10==3 get a ?utm_source=related link
	imageEvery    = 20        // products with id%20==1 link their full-size image
	featured      = 8         // products featured on the home page
	maxPages      = 5_000_000 // 4.2M products: about 1 GB of catalog in the serving process
	minPages      = 10
)

// sizeFor returns the number of products whose site has about pages reachable URLs.
func sizeFor(pages int) (products, cats int) {
	est := func(p int) int {
		k := catsFor(p)
		catPages := 0
		for c := 0; c < k; c++ {
			n := (p - c + k - 1) / k
			catPages += max(1, (n+perPage-1)/perPage)
		}
		// home, categories, products, tracking, home banners, images, feed, 404s, 500s, private
		return 1 + catPages + p + p/trackingEvery + min(4, p) + p/imageEvery + 1 + 1 + k + min(3, k) + 2
	}
	p := 1
	for est(p+1) <= pages {
		p++
	}
	return p, catsFor(p)
}

func catsFor(products int) int {
	return min(len(categories), max(3, products/80))
}

func newCatalog(pages int) *catalog {
	pages = min(max(pages, minPages), maxPages)
	p, k := sizeFor(pages)
	c := &catalog{nProducts: p, cats: categories[:k]}
	c.names = make([]string, p+1)
	c.productURLs = make([]string, p+1)
	for id := 1; id <= p; id++ {
		c.names[id] = adjectives[sitekit.Pick(id, 1, len(adjectives))] + " " +
			materials[sitekit.Pick(id, 2, len(materials))] + " " + nouns[sitekit.Pick(id, 3, len(nouns))]
		c.productURLs[id] = fmt.Sprintf("/p/%d", id)
	}
	c.escNames = make([]string, p+1)
	c.prices = make([]string, p+1)
	c.skus = make([]string, p+1)
	for id := 1; id <= p; id++ {
		c.escNames[id] = html.EscapeString(c.names[id])
		c.prices[id] = price(id)
		c.skus[id] = sku(id)
	}
	r := &sitekit.Rand{State: 42}
	for i := 0; i < nParagraphs; i++ {
		c.paragraphs = append(c.paragraphs, r.Sentences(words, 4+r.Intn(3), 8, 16))
	}
	for i := 0; i < nReviews; i++ {
		c.reviews = append(c.reviews, r.Sentences(words, 2, 8, 16))
	}
	return c
}

// category returns the index of the category product id belongs to.
func (c *catalog) category(id int) int { return (id - 1) % len(c.cats) }

// inCategory returns the number of products in category k.
func (c *catalog) inCategory(k int) int {
	return (c.nProducts - k + len(c.cats) - 1) / len(c.cats)
}

// categoryPages returns the number of listing pages of category k.
func (c *catalog) categoryPages(k int) int {
	return max(1, (c.inCategory(k)+perPage-1)/perPage)
}

// nthInCategory returns the id of the i-th (0-based) product of category k.
func (c *catalog) nthInCategory(k, i int) int { return k + 1 + i*len(c.cats) }

// price returns the price of product id, e.g. "$12.34".
func price(id int) string {
	c := cents(id)
	return fmt.Sprintf("$%d.%02d", c/100, c%100)
}

// cents returns the price of product id in cents: 1234 for "$12.34".
func cents(id int) int { return 199 + sitekit.Pick(id, 4, 49800) }

// sku returns the SKU of product id, e.g. "SKU-00017".
func sku(id int) string { return fmt.Sprintf("SKU-%05d", id) }

// product returns the product record of id.
func (c *catalog) product(id int) Product {
	return Product{ID: id, URL: c.productURLs[id], Name: c.names[id], Price: c.prices[id], SKU: c.skus[id]}
}

// related returns the ids of the four products product id links to.
func (c *catalog) related(id int) [4]int {
	next := func(d int) int { return (id-1+d)%c.nProducts + 1 }
	return [4]int{next(1), next(2), next(7), next(13)}
}
