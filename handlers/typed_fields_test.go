package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/datasite"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// A YAML spider with typed fields crawls the demo shop and the data site through every
// stage on a real Redis, and the JSONL file holds the typed values of the sites' truth:
// prices and ids as numbers, lists, rows of tables, a JSON-LD product read with no
// selector, a microdata product.
func TestCrawlStoresTypedFields(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	shop := demosite.New(300)
	shopURL := serve(t, shop) + "/"
	dataURL := serve(t, datasite.New()) + "/"
	src := fmt.Sprintf(`name: typed
start_urls: [%s, %s]
allowed_domains: [127.0.0.1]
follow:
  - links: "a[href]"
items:
%s%ssettings:
  concurrency: 16
  per_host_concurrency: 16
  allow_networks: [127.0.0.1/32]
`, shopURL, dataURL, demosite.TypedItemRules, datasite.ItemRules)
	sp, _, err := spiders.Parse("typed.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "items.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := handlers.Crawl(ctx, sp, quick(handlers.Options{Redis: srv.URL(), Out: out}))
	if err != nil {
		t.Fatal(err)
	}
	if !st.Done {
		t.Fatalf("crawl not done: %+v", st)
	}

	products := map[int]map[string]any{}  // by id
	others := map[string]map[string]any{} // the data site's, by type
	for _, rec := range readJSONL(t, out) {
		fields := map[string]any{}
		for k, v := range rec {
			if !strings.HasPrefix(k, "_") {
				fields[k] = v
			}
		}
		typ, _ := rec["_type"].(string)
		if typ != "product" {
			if others[typ] != nil {
				t.Errorf("item type %s stored twice", typ)
			}
			others[typ] = fields
			continue
		}
		id, ok := fields["id"].(float64) // a JSON number: stored typed, not as text
		if !ok || products[int(id)] != nil {
			t.Fatalf("product without a numeric id, or stored twice: %v", rec)
		}
		products[int(id)] = fields
	}

	want := shop.ExpectedTypedItems(shopURL)
	if len(products) != len(want) {
		t.Errorf("stored %d products, the shop has %d", len(products), len(want))
	}
	for i, p := range shop.Products() {
		if got := products[p.ID]; !reflect.DeepEqual(got, want[i]) {
			t.Errorf("product %d: (-want +got)\n-%s\n+%s", p.ID, asJSONText(want[i]), asJSONText(got))
		}
	}
	wantData := datasite.Expected(dataURL)
	for typ, w := range wantData {
		if got := others[typ]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s: (-want +got)\n-%s\n+%s", typ, asJSONText(w), asJSONText(got))
		}
	}
	if len(others) != len(wantData) {
		t.Errorf("item types %d, want %d: %v", len(others), len(wantData), others)
	}
}

func asJSONText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
