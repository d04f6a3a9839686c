package handlers

import (
	"fmt"
	"slices"
	"sync"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// goSpiders are the Go spiders compiled into this binary, by name (Register).
var goSpiders sync.Map // name -> func() *spiders.Spider

// Register makes a Go spider compiled into the binary available by name, to a fleet
// worker serving a crawl submitted with that name (fleet.Submission.GoSpider). build is
// called for each run of the crawl, so that runs share no state. Call it from an init
// function, as database/sql drivers register; it panics when name is registered twice
// or build is nil.
func Register(name string, build func() *spiders.Spider) {
	if build == nil {
		panic("handlers: Register of spider " + name + " with a nil build")
	}
	if _, dup := goSpiders.LoadOrStore(name, build); dup {
		panic("handlers: Register called twice for spider " + name)
	}
}

// Registered returns a new instance of the Go spider registered as name, or false when
// no spider has that name (or its build returned nil).
func Registered(name string) (*spiders.Spider, bool) {
	b, ok := goSpiders.Load(name)
	if !ok {
		return nil, false
	}
	sp := b.(func() *spiders.Spider)()
	if sp == nil {
		return nil, false
	}
	return sp, true
}

// RegisteredSpider is Registered with an error naming the registered spiders when name
// is not one of them.
func RegisteredSpider(name string) (*spiders.Spider, error) {
	if sp, ok := Registered(name); ok {
		return sp, nil
	}
	var names []string
	goSpiders.Range(func(k, _ any) bool { names = append(names, k.(string)); return true })
	slices.Sort(names)
	return nil, fmt.Errorf("handlers: no Go spider named %q is compiled into this binary (registered: %v)", name, names)
}
