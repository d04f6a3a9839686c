package fetch

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// Sixteen fetches of 1 MB pages (half announced by Content-Length, half chunked) under
// a 2 MB body budget: all complete, and the bytes held at once never pass the budget
// plus one max_body_size.
func TestBodyBudgetBoundsBytesInFlight(t *testing.T) {
	page := bytes.Repeat([]byte("<p>streamcrawl</p>\n"), (1<<20)/19)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		}
		for i := 0; i < len(page); i += 64 << 10 {
			w.Write(page[i:min(i+64<<10, len(page))])
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	rs := streamstest.Start(t)
	rdb := rs.Client()
	layout := streams.NewLayout("budget", 1)
	hosts, err := frontier.New(frontier.Config{Client: rdb, Layout: layout})
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.Close(context.Background())
	allow, robots := true, false
	const maxBody = 1100 << 10
	f, err := New(Config{Settings: spiders.Settings{AllowPrivateNetworks: allow, ObeyRobots: &robots,
		MaxBodySize: maxBody, BodyBudget: 2 << 20}, Frontier: hosts})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := srv.URL + "/" + strconv.Itoa(i)
			if i%2 == 1 {
				u += "?chunked=1"
			}
			res, body, _, err := f.http.roundTrip(ctx, &spiders.Request{URL: u})
			if err != nil {
				errs <- err
				return
			}
			if len(res.Body) != len(page) {
				errs <- fmt.Errorf("%s: body of %d bytes, want %d", u, len(res.Body), len(page))
			}
			// Hold the body a moment, as Handle does while encoding it.
			time.Sleep(20 * time.Millisecond)
			body.release()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("fetch: %v", err)
	}
	now, peak := f.budget.usage()
	if now != 0 {
		t.Fatalf("%d bytes still reserved after every fetch released", now)
	}
	if peak > 2<<20+maxBody+budgetStep {
		t.Fatalf("peak reserved %d bytes; want at most the budget plus one max_body_size (%d)", peak, 2<<20+maxBody)
	}
	if peak < 1<<20 {
		t.Fatalf("peak reserved %d bytes: the budget did not count the bodies", peak)
	}
	t.Logf("16 fetches of 1 MB pages, budget 2 MB: peak %d KB reserved", peak>>10)
}

// A fetch waiting for budget gives up when its context ends.
func TestBodyBudgetWaitEndsWithContext(t *testing.T) {
	b := newBodyBudget(100)
	first, err := b.start(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.start(ctx, 10); err == nil {
		t.Fatal("a second fetch got budget the first holds")
	}
	// The oldest may grow past the budget; a release lets the next one in.
	if err := first.grow(context.Background(), 300); err != nil {
		t.Fatal(err)
	}
	first.release()
	if _, err := b.start(context.Background(), 100); err != nil {
		t.Fatal(err)
	}
}
