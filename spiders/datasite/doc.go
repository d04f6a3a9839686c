// Package datasite serves pages whose data needs more than the text of one element, for
// tests of typed fields: a product page of a German shop with JSON-LD (an @graph, a
// script that is not valid JSON, one wrapped in an HTML comment), microdata, a price
// written "1.299,00 €", tags, and a table of variants; and an API page of rustdoc, as
// the issue that asked for field processors describes it (the kind of the page only in
// the body's class, the item path inside a heading).
//
// A Site is an http.Handler: / links the two pages, every other path is a 404.
// ItemRules are the entries of a YAML spider's items list that read them, and Expected
// the items a correct crawl stores with them.
package datasite
