package demosite_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

func Example() {
	site := demosite.New(2000)
	srv := httptest.NewServer(site)
	defer srv.Close()

	res, err := http.Get(srv.URL + "/p/17")
	if err != nil {
		panic(err)
	}
	res.Body.Close()
	fmt.Println(res.StatusCode, site.Requests()["/p/17"], site.TotalRequests())

	// Ground truth for a crawl that obeys robots.txt.
	fmt.Println(len(site.Reachable(true)), len(site.Products()))
	fmt.Println(site.Products()[16])
	// Output:
	// 200 1 1
	// 2000 1646
	// {17 /p/17 Nordic Copper Doormat $437.30 SKU-00017}
}
