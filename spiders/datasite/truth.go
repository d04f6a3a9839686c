package datasite

import (
	"encoding/json"
	"strings"
)

// Expected returns, by item type, the fields of the items a correct crawl of the site
// served at baseURL (e.g. "http://127.0.0.1:8080/") stores with ItemRules, as JSON
// decodes them (numbers float64, lists []any, objects map[string]any): one item of
// each type.
func Expected(baseURL string) map[string]map[string]any {
	origin := strings.TrimSuffix(baseURL, "/")
	var out map[string]map[string]any
	if err := json.Unmarshal([]byte(strings.ReplaceAll(expected, "ORIGIN", origin)), &out); err != nil {
		panic("datasite: expected items: " + err.Error())
	}
	return out
}

const expected = `{
"ld_product": {
  "name": "Handmühle Walnuss",
  "sku": "HM-1299",
  "brand": "Mahlwerk",
  "price": 1299,
  "currency": "EUR",
  "prices": [1299, 1499],
  "availability": ["InStock", "OutOfStock"],
  "images": ["https://kaffeehaus.example/img/hm-1.jpg", "https://kaffeehaus.example/img/hm-2.jpg"],
  "rating": 4.6,
  "reviews": 128,
  "categories": ["Mühlen", "Handmühlen"],
  "seller": "Kaffeehaus GmbH",
  "offers": [
    {"@type": "Offer", "sku": "HM-1299-S", "price": "1299.00", "priceCurrency": "EUR", "availability": "https://schema.org/InStock"},
    {"@type": "Offer", "sku": "HM-1299-L", "price": 1499, "priceCurrency": "EUR", "availability": "https://schema.org/OutOfStock"}]
},
"md_product": {
  "name": "Handmühle Walnuss",
  "image": "ORIGIN/shop/img/hm-1.jpg",
  "price": 1299,
  "currency": "EUR",
  "availability": "https://schema.org/InStock",
  "rating": 4.6
},
"listing": {
  "name": "Handmühle Walnuss",
  "price": 1299,
  "currency": "EUR",
  "number": 1299,
  "tags": ["Kaffee", "Mühle", "Holz"],
  "tag_line": "Kaffee / Mühle / Holz",
  "tag_links": ["ORIGIN/t/kaffee", "ORIGIN/t/muehle", "ORIGIN/t/holz"],
  "keywords": ["Kaffee", "Mühle", "Handarbeit"],
  "crumbs": ["Home", "Mühlen"],
  "stock": "unbekannt",
  "variants": [
    {"sku": "HM-1299-S", "name": "Handmühle S", "size": "S", "price": 1299, "url": "ORIGIN/shop/varianten/s"},
    {"sku": "HM-1299-L", "name": "Handmühle L", "size": "L", "price": 1499, "url": "ORIGIN/shop/varianten/l"}]
},
"api": {
  "kind": "struct",
  "path": "std::vec::Vec",
  "path_parts": "std::vec::Vec",
  "summary": "A contiguous growable array type, written as Vec<T>, short for ‘vector’.",
  "methods": ["new", "with_capacity", "push"]
}
}`
