package demosite

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders/internal/sitekit"
)

// The details are read from the served HTML with regular expressions, independently
// of the renderer and of the spiders package.
var (
	reCrumbs    = regexp.MustCompile(`<ol class="breadcrumbs">(.*)</ol>`)
	reCrumb     = regexp.MustCompile(`<li>(?:<a [^>]*>)?([^<]*)(?:</a>)?</li>`)
	reSpecTable = regexp.MustCompile(`(?s)<table class="specs">(.*?)</table>`)
	reSpecRow   = regexp.MustCompile(`<tr><th>([^<]*)</th><td>([^<]*)</td></tr>`)
	reReviewer  = regexp.MustCompile(`<p class="by">([^<]*)</p>`)
)

func TestDetailsMatchPages(t *testing.T) {
	s := New(200)
	srv := httptest.NewServer(s)
	defer srv.Close()
	for _, p := range s.Products()[:40] {
		body := sitekit.Get(t, srv.URL+p.URL, http.StatusOK)
		got := Details{ID: p.ID}
		price := strings.TrimPrefix(sitekit.Field(rePrice, body), "$")
		dollars, cents, _ := strings.Cut(price, ".")
		d, err1 := strconv.Atoi(dollars)
		c, err2 := strconv.Atoi(cents)
		if err1 != nil || err2 != nil || len(cents) != 2 {
			t.Fatalf("%s: price %q", p.URL, price)
		}
		got.Cents = d*100 + c
		for _, m := range reCrumb.FindAllStringSubmatch(sitekit.Field(reCrumbs, body), -1) {
			got.Breadcrumbs = append(got.Breadcrumbs, html.UnescapeString(m[1]))
		}
		for _, m := range reSpecRow.FindAllStringSubmatch(reSpecTable.FindString(body), -1) {
			got.Specs = append(got.Specs, Spec{html.UnescapeString(m[1]), html.UnescapeString(m[2])})
		}
		for _, m := range reReviewer.FindAllStringSubmatch(body, -1) {
			got.Reviewers = append(got.Reviewers, html.UnescapeString(m[1]))
		}
		if want := s.Details(p.ID); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: (-want +got)\n-%+v\n+%+v", p.URL, want, got)
		}
		if want := fmt.Sprintf("$%d.%02d", got.Cents/100, got.Cents%100); want != p.Price {
			t.Errorf("%s: Cents %d, Price %q", p.URL, got.Cents, p.Price)
		}
	}
}
