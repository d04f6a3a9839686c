package streamstest

import (
	"cmp"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Flight counts how many requests a test server answers at once, as the site sees it:
// a request is in flight from when its handler starts until the last write of its answer
// begins (or the handler returns, for an answer without a body). Counting to the
// handler's return instead overcounts on a loaded machine: a body written in one call
// reaches the client at once, the client may send its next request (its slot given
// back), and that request's handler can start before the first handler's deferred count
// runs. Those are two requests the client never had in flight together.
type Flight struct {
	mu    sync.Mutex
	spans []flightSpan
	open  int // handlers running now
}

// flightSpan is one answered request: from its start to its last write's start.
type flightSpan struct{ from, to time.Time }

// Wrap returns h with its requests counted.
func (f *Flight) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lw := &lastWrite{ResponseWriter: w}
		from := time.Now()
		f.mu.Lock()
		f.open++
		f.mu.Unlock()
		defer func() {
			to := lw.at
			if to.IsZero() {
				to = time.Now()
			}
			f.mu.Lock()
			f.open--
			f.spans = append(f.spans, flightSpan{from, to})
			f.mu.Unlock()
		}()
		h.ServeHTTP(lw, r)
	})
}

// Max returns the most requests in flight at once among those answered so far.
func (f *Flight) Max() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	type edge struct {
		at   time.Time
		step int
	}
	edges := make([]edge, 0, 2*len(f.spans))
	for _, s := range f.spans {
		edges = append(edges, edge{s.from, 1}, edge{s.to, -1})
	}
	// At one instant an end goes before a start: the two did not overlap.
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.step, b.step)) })
	now, most := 0, 0
	for _, e := range edges {
		now += e.step
		most = max(most, now)
	}
	return most
}

// Running returns the number of handlers running now.
func (f *Flight) Running() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.open
}

// lastWrite notes when the last write of an answer began.
type lastWrite struct {
	http.ResponseWriter
	at time.Time
}

func (w *lastWrite) Write(b []byte) (int, error) {
	w.at = time.Now()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the server's writer (Flush, deadlines).
func (w *lastWrite) Unwrap() http.ResponseWriter { return w.ResponseWriter }
