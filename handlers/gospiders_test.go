package handlers_test

import (
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// TestRegisterGoSpider: a registered spider is built anew for each lookup, an unknown
// name is an error naming what is registered, and a second Register of a name panics.
func TestRegisterGoSpider(t *testing.T) {
	builds := 0
	handlers.Register("gospiders-test", func() *spiders.Spider {
		builds++
		return &spiders.Spider{Name: "gospiders-test", StartURLs: []string{"http://127.0.0.1:1/"}}
	})
	a, ok := handlers.Registered("gospiders-test")
	b, ok2 := handlers.Registered("gospiders-test")
	if !ok || !ok2 || a == b || builds != 2 {
		t.Fatalf("Registered: ok %v %v, same spider %v, builds %d; want two new spiders", ok, ok2, a == b, builds)
	}
	if _, ok := handlers.Registered("gospiders-nope"); ok {
		t.Error("Registered found a spider never registered")
	}
	_, err := handlers.RegisteredSpider("gospiders-nope")
	if err == nil || !strings.Contains(err.Error(), `"gospiders-nope"`) || !strings.Contains(err.Error(), "gospiders-test") {
		t.Errorf("RegisteredSpider of an unknown name: %v, want an error naming it and the registered ones", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second Register of one name did not panic")
		}
	}()
	handlers.Register("gospiders-test", func() *spiders.Spider { return nil })
}
