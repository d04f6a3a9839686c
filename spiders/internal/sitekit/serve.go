package sitekit

import (
	"net/http"
	"strconv"
	"sync"
)

// Serve answers r with what render gives for its path and raw query. Absolute links
// in the answer use r's Host header ("localhost" when empty), and https when the
// connection is TLS. The body is rendered into a *[]byte taken from pool and put back
// afterwards, so pool.New must return a *[]byte. A HEAD request gets the headers only.
func Serve(w http.ResponseWriter, r *http.Request, pool *sync.Pool, render RenderFunc) {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	host := r.Host
	if host == "" {
		host = "localhost"
	}
	bp := pool.Get().(*[]byte)
	body, status, ctype := render((*bp)[:0], scheme+host, r.URL.Path, r.URL.RawQuery)
	h := w.Header()
	h["Content-Type"] = []string{ctype}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	*bp = body
	pool.Put(bp)
}
