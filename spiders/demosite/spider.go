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
