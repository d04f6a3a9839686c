package demosite

import (
	"net/http"
	"strconv"
	"sync"
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

// ServeHTTP counts the request and answers it. Absolute links in the answer use the
// request's Host header (and https when the connection is TLS).
func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.counter.add(requestKey(r))
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	host := r.Host
	if host == "" {
		host = "localhost"
	}
	bp := bufPool.Get().(*[]byte)
	body, status, ctype := s.render((*bp)[:0], scheme+host, r.URL.Path, r.URL.RawQuery)
	h := w.Header()
	h["Content-Type"] = []string{ctype}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	*bp = body
	bufPool.Put(bp)
}

// requestKey returns path?query of r as sent, without allocating in the common case.
func requestKey(r *http.Request) string {
	if u := r.RequestURI; u != "" && u[0] == '/' {
		return u
	}
	return r.URL.RequestURI()
}
