package fleet

import (
	"context"
	"sync"
)

// Watcher keeps the registry's list of crawls for a process that looks at it often (the
// exporter at every scrape): each List reads the generation (one GET) and reads the
// crawls again only when it moved. Safe for concurrent use.
type Watcher struct {
	reg  *Registry
	mu   sync.Mutex
	gen  int64
	list []Crawl
	read bool // list holds a read
}

// Watcher returns a watcher of r.
func (r *Registry) Watcher() *Watcher { return &Watcher{reg: r} }

// List returns every registered crawl, sorted by name, as of the registry's current
// generation. The slice is shared: do not change it.
func (w *Watcher) List(ctx context.Context) ([]Crawl, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	gen, err := w.reg.Gen(ctx)
	if err != nil {
		return nil, err
	}
	if w.read && gen == w.gen {
		return w.list, nil
	}
	list, err := w.reg.List(ctx)
	if err != nil {
		return nil, err
	}
	w.gen, w.list, w.read = gen, list, true
	return list, nil
}
