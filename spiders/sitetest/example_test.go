package sitetest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/streamcrawl/streamcrawl/spiders/sitetest"
)

func Example() {
	site := sitetest.New(2000)
	srv := httptest.NewServer(site)
	defer srv.Close()

	for _, u := range []string{"/search?sort=date&q=go", "/search?q=go&sort=date"} {
		res, err := http.Get(srv.URL + u)
		if err != nil {
			panic(err)
		}
		res.Body.Close()
	}
	// Both orders are one page, counted under the sorted form.
	fmt.Println(site.Requests())
	fmt.Println(len(site.Reachable(true)), len(site.Articles()))
	// Output:
	// map[/search?q=go&sort=date:2]
	// 1999 1594
}
