package demosite_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

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

func ExampleSite_SetPeers() {
	a, b := demosite.New(100), demosite.New(100)
	srvA, srvB := httptest.NewServer(a), httptest.NewServer(b)
	defer srvA.Close()
	defer srvB.Close()
	group := []string{srvA.URL, srvB.URL}
	for _, s := range []*demosite.Site{a, b} {
		if err := s.SetPeers(group); err != nil { // each site leaves itself out
			panic(err)
		}
	}

	res, err := http.Get(srvA.URL + "/")
	if err != nil {
		panic(err)
	}
	home, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.Count(string(home), `class="peer"`), strings.Contains(string(home), `href="`+srvB.URL+`/"`))
	fmt.Println(a.TotalRequests(), b.TotalRequests())
	// Output:
	// 1 true
	// 1 0
}
