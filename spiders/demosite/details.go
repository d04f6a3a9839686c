package demosite

import (
	"fmt"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// Details is what the page of a product shows beyond Product, as a spider with typed
// fields reads it: the price as a number, the breadcrumbs and reviewers as lists, the
// spec table as rows.
type Details struct {
	// ID is the product number.
	ID int
	// Cents is the price in cents: 1234 for the Price "$12.34".
	Cents int
	// Breadcrumbs are the texts of the breadcrumb trail: "Home", the category's name,
	// the product's name.
	Breadcrumbs []string
	// Specs are the rows of the spec table, in order.
	Specs []Spec
	// Reviewers are the names under the product's reviews, in order.
	Reviewers []string
}

// Spec is one row of a product's spec table.
type Spec struct {
	// Name is the row's heading ("Width"); Value its cell ("45 cm").
	Name, Value string
}

// Details returns the details of product id (1 to the number of products).
func (s *Site) Details(id int) Details {
	c := s.cat
	d := Details{
		ID:          id,
		Cents:       cents(id),
		Breadcrumbs: []string{"Home", c.cats[c.category(id)].name, c.names[id]},
		Specs: []Spec{
			{"Material", materials[sitekit.Pick(id, 2, len(materials))]},
			{"Width", fmt.Sprintf("%d cm", 10+sitekit.Pick(id, 20, 90))},
			{"Height", fmt.Sprintf("%d cm", 5+sitekit.Pick(id, 21, 120))},
			{"Weight", fmt.Sprintf("%d kg", 1+sitekit.Pick(id, 22, 25))},
			{"Warranty", "2 years"},
			{"Care", "Wipe with a dry cloth"},
		},
	}
	for j := 0; j < 4; j++ {
		d.Reviewers = append(d.Reviewers, reviewers[sitekit.Pick(id, 50+j, len(reviewers))])
	}
	return d
}

// ExpectedTypedItems returns the fields a correct crawl of the site served at baseURL
// stores with TypedItemRules, by product ID, as JSON decodes them: one item per
// product, price a number (float64), id a number, breadcrumbs and reviewers lists of
// strings, specs a list of {name, value} objects.
func (s *Site) ExpectedTypedItems(baseURL string) []map[string]any {
	products := s.Products()
	plain := s.ExpectedItems(baseURL)
	out := make([]map[string]any, len(products))
	for i, p := range products {
		d := s.Details(p.ID)
		specs := make([]any, len(d.Specs))
		for j, sp := range d.Specs {
			specs[j] = map[string]any{"name": sp.Name, "value": sp.Value}
		}
		out[i] = map[string]any{
			"url":         plain[i]["url"],
			"name":        p.Name,
			"price":       float64(d.Cents) / 100,
			"currency":    "$",
			"id":          float64(p.ID),
			"breadcrumbs": jsonList(d.Breadcrumbs),
			"reviewers":   jsonList(d.Reviewers),
			"specs":       specs,
		}
	}
	return out
}

// jsonList returns ss as a list of JSON values.
func jsonList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
