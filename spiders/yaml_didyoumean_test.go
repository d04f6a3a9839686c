package spiders

import (
	"slices"
	"testing"
)

// TestUnknownKeyDidYouMean: a misspelt key is named with the key it is closest to, at
// every level of a spider file; a key like no other gets no guess.
func TestUnknownKeyDidYouMean(t *testing.T) {
	const head = "name: shop\nstart_urls: [http://example.com/]\n"
	tests := []struct{ src, want string }{
		{head + "settings:\n  concurency: 3\n", `spiders: shop.yaml:4: settings: unknown key "concurency" (did you mean "concurrency"?)`},
		{head + "settings:\n  obey_robot: false\n", `spiders: shop.yaml:4: settings: unknown key "obey_robot" (did you mean "obey_robots"?)`},
		{head + "settings:\n  allow_network: [127.0.0.1/32]\n", `spiders: shop.yaml:4: settings: unknown key "allow_network" (did you mean "allow_networks"?)`},
		{"name: shop\nstart_url: [http://example.com/]\n", `spiders: shop.yaml:2: unknown key "start_url" (did you mean "start_urls"?)`},
		{head + "follow:\n  - links: a\n    alow: [x]\n", `spiders: shop.yaml:5: follow[0]: unknown key "alow" (did you mean "allow"?)`},
		{head + "items:\n  - type: p\n    feilds: {a: b}\n", `spiders: shop.yaml:5: items[0]: unknown key "feilds" (did you mean "fields"?)`},
		{head + "settings:\n  limits:\n    - domain: a\n      delai: 1s\n", `spiders: shop.yaml:6: settings.limits[0]: unknown key "delai" (did you mean "delay"?)`},
		{head + "settings:\n  extra: 3\n", `spiders: shop.yaml:4: settings: unknown key "extra"`},
	}
	for _, tt := range tests {
		_, _, err := Parse("shop.yaml", []byte(tt.src))
		if err == nil || err.Error() != tt.want {
			t.Errorf("error (-want +got):\n-%s\n+%v", tt.want, err)
		}
	}
}

// TestItemFieldsDeclared: a YAML spider names each item type's fields, in file order,
// for the parse stage's field counts.
func TestItemFieldsDeclared(t *testing.T) {
	src := "name: shop\nstart_urls: [http://example.com/]\nitems:\n" +
		"  - {type: product, fields: {url: \"link::attr(href)\", name: \"h1::text\"}}\n" +
		"  - {type: product, when: div.x, fields: {name: \"h2::text\", sku: \".sku\"}}\n" +
		"  - {type: review, fields: {stars: \".stars\"}}\n"
	sp, _, err := Parse("shop.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"product": {"url", "name", "sku"}, "review": {"stars"}}
	if len(sp.ItemFields) != len(want) {
		t.Fatalf("ItemFields %v, want %v", sp.ItemFields, want)
	}
	for typ, fields := range want {
		if !slices.Equal(sp.ItemFields[typ], fields) {
			t.Errorf("fields of %s (-want +got):\n-%v\n+%v", typ, fields, sp.ItemFields[typ])
		}
	}
}
