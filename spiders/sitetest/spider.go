package sitetest

// itemRules are the entries of the items list of SpiderYAML's spider: one "article"
// item per page with an <article>, with the fields of ExpectedItems.
const itemRules = `  - type: article
    when: "article"
    fields:
      url: "link[rel=canonical]::attr(href)"
      title: "article h1::text"
      author: "article .author::text"
      date: "article time::attr(datetime)"
`
