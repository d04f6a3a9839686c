package jssite

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestNumberedPages: /p/, /go/, /guide/ and /brand/ answer 200 for 1..count and 404 for
// 0, count+1 and a non-number; /go/<n> moves the browser to /p/<n>.
func TestNumberedPages(t *testing.T) {
	t.Parallel()
	s := New(12)
	get := func(path string) (int, string) {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code, w.Body.String()
	}
	for prefix, count := range map[string]int{"/p/": s.Products(), "/go/": s.Products(), "/guide/": s.Guides(), "/brand/": s.Brands()} {
		for n, want := range map[string]int{"1": 200, strconv.Itoa(count): 200, "0": 404, strconv.Itoa(count + 1): 404, "x": 404} {
			if code, _ := get(prefix + n); code != want {
				t.Errorf("GET %s%s = %d, want %d", prefix, n, code, want)
			}
		}
	}
	if _, body := get("/go/7"); !strings.Contains(body, `location.replace("/p/7")`) {
		t.Errorf("/go/7 does not move to /p/7: %q", body)
	}
}
