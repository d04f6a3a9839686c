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
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"

	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
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
		doc, err := res.Doc()
		if err != nil {
			return nil // not HTML: nothing to extract
		}
		p := doc.Find("div.product")
		if p.Length() == 0 {
			return nil
		}
		canonical, _ := doc.Find(`link[rel=canonical]`).Attr("href")
		it := spiders.NewItem("product", map[string]any{
			"url":   canonical,
			"name":  strings.TrimSpace(p.Find(".product-name").Text()),
			"price": strings.TrimSpace(p.Find(".price").Text()),
			"sku":   strings.TrimSpace(p.Find(".sku").Text()),
		})
		out.Yield(it)
		return nil
	})
	return sp
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "gospider:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	// Info and above on stderr; GOSPIDER_DEBUG=1 shows every fetch and parse.
	cfg := zap.NewDevelopmentConfig()
	cfg.Level = zap.NewAtomicLevelAt(zap.InfoLevel)
	if os.Getenv("GOSPIDER_DEBUG") == "1" {
		cfg.Level = zap.NewAtomicLevelAt(zap.DebugLevel)
	}
	cfg.DisableStacktrace = true
	log, err := cfg.Build()
	if err != nil {
		return err
	}
	defer log.Sync()

	// The demo shop on a free loopback port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go http.Serve(ln, demosite.New(1000)) //nolint:errcheck // ends with the process
	sp := shopSpider("http://" + ln.Addr().String() + "/")

	// Redis: REDIS_URL, or an embedded one.
	rdb, err := streams.Connect(ctx, streams.ClientOptions{URL: os.Getenv("REDIS_URL"), Logger: log})
	if err != nil {
		return err
	}
	defer rdb.Close()
	layout, err := frontier.ReadLayout(ctx, rdb, sp.Name)
	if err != nil {
		return err
	}
	if _, err := frontier.Reset(ctx, rdb, layout); err != nil {
		return err
	}
	sink, err := processors.OpenJSONL("goshop.jsonl")
	if err != nil {
		return err
	}
	if _, err := handlers.Seed(ctx, rdb, sp, nil); err != nil {
		return err
	}
	// All three stages in this process, until the crawl is done. Run the same spider
	// with Stages: []string{"fetch"} (or parse, store) in other processes to scale out.
	err = handlers.Run(ctx, handlers.Config{
		Client: rdb, Spider: sp, Sink: sink, UntilDone: true, Logger: log,
		Stages:      []string{streams.StageFetch, streams.StageParse, streams.StageStore},
		Processors:  processors.Chain{processors.Require("name", "price")},
		CountUnread: rdb.Embedded != nil,
	})
	if err != nil {
		return err
	}
	if layout, err = frontier.ReadLayout(ctx, rdb, sp.Name); err != nil {
		return err
	}
	st, err := frontier.ReadStatus(ctx, rdb, layout)
	if err != nil {
		return err
	}
	fmt.Printf("fetched %d pages, stored %d products in goshop.jsonl\n", st.Stats["pages_fetched"], st.ItemsStored)
	return nil
}
