package datasite

// ItemRules are the entries of a YAML spider's items list that read the site's pages,
// one item type each way of reading: ld_product from JSON-LD alone (no selector),
// md_product from microdata alone, listing from the visible product page (a price,
// tags, a regex, rows of a table), api from the rustdoc page. Expected are the items
// they yield.
const ItemRules = `  - type: ld_product
    when: 'script[type="application/ld+json"]'
    key: [sku]
    fields:
      name: {jsonld: Product, path: name}
      sku: {jsonld: Product, path: sku}
      brand: {jsonld: Product, path: brand.name}
      price: {jsonld: Product, path: "offers[0].price", type: price}
      currency: {jsonld: Product, path: offers.priceCurrency}
      prices: {jsonld: Product, path: offers.price, all: true, type: number}
      availability: {jsonld: Product, path: offers.availability, all: true, re: '/(\w+)$'}
      images: {jsonld: Product, path: image, all: true}
      rating: {jsonld: Product, path: aggregateRating.ratingValue, type: number}
      reviews: {jsonld: Product, path: aggregateRating.reviewCount, type: int}
      categories: {jsonld: BreadcrumbList, path: itemListElement.name, all: true}
      seller: {jsonld: Organization, path: name}
      offers: {jsonld: Offer, all: true}
  - type: md_product
    when: "[itemscope]"
    fields:
      name: {microdata: Product, path: name}
      image: {microdata: Product, path: image}
      price: {microdata: Product, path: offers.price, type: price}
      currency: {microdata: Offer, path: priceCurrency}
      availability: {microdata: Product, path: offers.availability}
      rating: {microdata: AggregateRating, path: ratingValue, type: number}
  - type: listing
    when: "table.varianten"
    fields:
      name: "h1::text"
      price: {css: ".preis .betrag", type: price}
      currency: {css: ".preis .betrag", type: currency}
      number: {css: ".nummer span", strip: "HM-", type: int}
      tags: {css: ".tags li", all: true}
      tag_line: {css: ".tags li", all: true, join: " / "}
      tag_links: {css: ".tags a::attr(href)", all: true}
      keywords: {css: ".schlagworte", re: 'Schlagwörter:(.*)', split: ","}
      crumbs: {css: "nav.crumbs a", all: true, replace: {Start: Home}}
      stock: {css: ".lager", default: unbekannt}
      variants:
        css: "table.varianten tr[data-sku]"
        fields:
          sku: "::attr(data-sku)"
          name: "td:nth-child(1)"
          size: "td:nth-child(2)"
          price: {css: "td:nth-child(3)", type: price}
          url: "a::attr(href)"
  - type: api
    when: "body.rustdoc"
    key: [path]
    fields:
      kind: {css: "body::attr(class)", re: 'rustdoc (\w+)'}
      path: {css: ".main-heading h1", re: '^\w+ (\S+)'}
      path_parts: {css: ".main-heading h1 a", all: true, join: "::"}
      summary: ".docblock p"
      methods: {css: "section.method a.fn", all: true}
`
