package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// Crawl runs a spider to the end in one call: here on an embedded Redis (Options.Redis
// empty) against a three-page site, writing its items to a JSONL file.
func ExampleCrawl() {
	site := http.NewServeMux()
	site.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<a href="/p/1">Lamp</a> <a href="/p/2">Desk</a>`)
	})
	site.HandleFunc("/p/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<h1> Product %s </h1>`, r.URL.Path[len("/p/"):])
	})
	srv := httptest.NewServer(site)
	defer srv.Close()

	sp := &spiders.Spider{Name: "example", StartURLs: []string{srv.URL + "/"},
		Settings: spiders.Settings{AllowNetworks: []string{"127.0.0.1/32"}}}
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		for _, link := range res.Links("a[href]") {
			if req, err := res.Follow(link, "product"); err == nil {
				out.Follow(req)
			}
		}
		return nil
	})
	sp.Handle("product", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		out.Yield(spiders.NewItem("product", map[string]any{"name": res.Text("h1")}))
		return nil
	})

	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	st, err := handlers.Crawl(context.Background(), sp, handlers.Options{Out: filepath.Join(dir, "items.jsonl")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("done:", st.Done, "pages:", st.Stats["pages_fetched"], "items:", st.ItemsStored)
	// Output:
	// done: true pages: 3 items: 2
}
