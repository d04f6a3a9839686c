package demosite

// ItemRules are the entries of a YAML spider's items list that scrape the shop: one
// "product" item per page with a div.product, with the fields of ExpectedItems. The
// spider of SpiderYAML uses them; a spider with other settings (a benchmark's) can too.
const ItemRules = `  - type: product
    when: "div.product"
    fields:
      url: "link[rel=canonical]::attr(href)"
      name: ".product-name::text"
      price: ".price::text"
      sku: ".sku::text"
`

// TypedItemRules are like ItemRules with typed fields: the price as a number and its
// currency, the product number taken from the SKU by a regular expression, the
// breadcrumbs and reviewers as lists, and the spec table as a list of rows. The items
// they store are ExpectedTypedItems.
const TypedItemRules = `  - type: product
    when: "div.product"
    fields:
      url: "link[rel=canonical]::attr(href)"
      name: ".product-name::text"
      price: {css: ".price::text", type: price}
      currency: {css: ".price", type: currency}
      id: {css: ".sku", re: 'SKU-(\d+)', type: int}
      breadcrumbs: {css: ".breadcrumbs li", all: true}
      reviewers: {css: ".review .by", all: true}
      specs:
        css: "table.specs tr"
        fields: {name: th, value: td}
`
