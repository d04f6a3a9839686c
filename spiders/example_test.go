package spiders_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// page returns a response for an HTML body, as the parse stage hands it to a callback.
func page(sp *spiders.Spider, url, body string) *spiders.Response {
	req, _ := spiders.NewRequest(url, "parse")
	return &spiders.Response{Request: req, URL: url, Status: http.StatusOK, Spider: sp,
		Headers: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Body: []byte(body)}
}

// A spider with two callbacks: "parse" follows product links to "product", which
// yields one item a page. Callbacks are registered by name because requests travel
// through Redis to whichever process parses them.
func ExampleSpider_Handle() {
	sp := &spiders.Spider{Name: "shop", StartURLs: []string{"https://shop.example/"}}
	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		for _, link := range res.Links("a.product") {
			req, err := res.Follow(link, "product")
			if err != nil {
				return err
			}
			out.Follow(req)
		}
		return nil
	})
	sp.Handle("product", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
		out.Yield(spiders.NewItem("product", map[string]any{"name": res.Text("h1")}))
		return nil
	})

	parse, _ := sp.Callback("parse")
	out := &spiders.Output{}
	home := page(sp, "https://shop.example/", `<a class="product" href="/p/1">Lamp</a> <a class="product" href="/p/2#reviews">Desk</a>`)
	if err := parse(context.Background(), home, out); err != nil {
		fmt.Println(err)
	}
	for _, r := range out.Requests {
		fmt.Println(r.URL, r.Callback, r.Depth)
	}
	// Output:
	// https://shop.example/p/1 product 1
	// https://shop.example/p/2 product 1
}

// Follow resolves a link against the page and names the callback that will parse it;
// a callback the spider has not registered is an error at once, not when the page
// is parsed later in another process.
func ExampleResponse_Follow() {
	sp := &spiders.Spider{Name: "shop"}
	sp.Handle("parse", func(context.Context, *spiders.Response, *spiders.Output) error { return nil })
	sp.Handle("product", func(context.Context, *spiders.Response, *spiders.Output) error { return nil })
	res := page(sp, "https://shop.example/c/lamps?page=2", "")

	req, err := res.Follow("../p/7", "product")
	fmt.Println(req.URL, err)
	_, err = res.Follow("../p/7", "prodcut")
	fmt.Println(err)
	// Output:
	// https://shop.example/p/7 <nil>
	// spiders: follow ../p/7: spider "shop" has no callback "prodcut" (has [parse product])
}

// Text and Attr read one value each, trimmed; an element that is not there gives "".
func ExampleResponse_Text() {
	res := page(nil, "https://shop.example/p/7", `<div class="product">
	  <h1 class="name">
	    Brass Lamp
	  </h1>
	  <span class="price"> $12.50 </span>
	  <img class="main" src=" /img/7.jpg ">
	  <li class="tag">desk</li><li class="tag"> warm light </li>
	</div>`)
	fmt.Printf("%q\n", res.Text(".name"))
	fmt.Printf("%q\n", res.Text(".price"))
	fmt.Printf("%q\n", res.Attr("img.main", "src"))
	fmt.Printf("%q\n", res.Texts("li.tag"))
	fmt.Printf("%q\n", res.Text(".sku"))
	// Output:
	// "Brass Lamp"
	// "$12.50"
	// "/img/7.jpg"
	// ["desk" "warm light"]
	// ""
}

// Callbacks are usually written as functions of the spider's package and registered
// together; Validate checks that the spider can run (a name, a "parse" callback, start
// URLs that parse, settings in range).
func ExampleSpider_Validate() {
	sp := &spiders.Spider{Name: "shop", StartURLs: []string{"https://shop.example/"}}
	fmt.Println(strings.Contains(fmt.Sprint(sp.Validate()), `no callback "parse"`))
	sp.Handle("parse", func(context.Context, *spiders.Response, *spiders.Output) error { return nil })
	fmt.Println(sp.Validate())
	// Output:
	// true
	// <nil>
}
