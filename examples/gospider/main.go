// Command gospider is a complete streamcrawl spider written in Go: it crawls the bundled
// demo shop with two named callbacks and stores products in a JSONL file.
//
//	go run ./examples/gospider                       # embedded Redis, demo shop started here
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/gospider
//
// Callbacks are looked up by name because requests travel through Redis: any process
// of any stage can parse any response, so a spider is the same code in every process.
package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// shopSpider follows every listing link with "parse" and parses product pages with
// "product".
func shopSpider(start string) *spiders.Spider {
	sp := &spiders.Spider{
		Name:           "goshop",
		StartURLs:      []string{start},
		AllowedDomains: []string{"127.0.0.1"},
		Settings:       spiders.Settings{Concurrency: 16, PerHostConcurrency: 16, AllowNetworks: []string{"127.0.0.1/32"}}, // the demo shop runs on loopback
	}
	// parse: home and category pages. Product links go to "product", the rest here.
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		for _, link := range res.Links("a[href]") {
			callback := "parse"
			if strings.Contains(link, "/p/") {
				callback = "product"
			}
			req, err := res.Follow(link, callback)
			if err != nil {
				continue // a malformed link: skip it
			}
			out.Follow(req)
		}
		return nil
	})
	// product: one item per product page.
	sp.Handle("product", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		if res.Text("div.product") == "" {
			return nil // not a product page after all
		}
		out.Yield(spiders.NewItem("product", map[string]any{
			"url":   res.Attr("link[rel=canonical]", "href"),
			"name":  res.Text("div.product .product-name"),
			"price": res.Text("div.product .price"),
			"sku":   res.Text("div.product .sku"),
		}))
		return nil
	})
	return sp
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Getenv("REDIS_URL"), "goshop.jsonl"); err != nil {
		fmt.Fprintln(os.Stderr, "gospider:", err)
		os.Exit(1)
	}
}

// run crawls the demo shop on redisURL (empty: an embedded Redis) into out: all the
// wiring a Go spider needs.
func run(ctx context.Context, redisURL, out string) error {
	shop := httptest.NewServer(demosite.New(1000)) // the demo shop on a free loopback port
	defer shop.Close()
	st, err := handlers.Crawl(ctx, shopSpider(shop.URL+"/"), handlers.Options{Redis: redisURL, Out: out, Fresh: true,
		Processors: processors.Chain{processors.Require("name", "price")}})
	if err != nil {
		return err
	}
	fmt.Printf("fetched %d pages, stored %d products in %s\n", st.Stats["pages_fetched"], st.ItemsStored, out)
	return nil
}
