package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestARequestWhoseSlotWasHandedOnIsNotSent delivers requests handed out a minute ago
// (their fetcher slept, say, past a third of the lease's TTL): the fetcher asks Redis
// whether each still holds its host slot right before it would leave. The one whose
// lease is gone (it expired and the slot went to another request) is not sent and goes
// back to its host's queue; the one still leased is sent.
func TestARequestWhoseSlotWasHandedOnIsNotSent(t *testing.T) {
	var served atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>ok</body></html>"))
	}))
	defer site.Close()
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	layout := streams.NewLayout("fence", 1)
	k := layout.Parts[0]
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		t.Fatal(err)
	}
	settings := spiders.Settings{AllowPrivateNetworks: true, ObeyRobots: new(bool), PerHostConcurrency: 2}
	hosts, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, Hosts: frontier.HostRule{Concurrency: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.Close(ctx)
	f, err := New(Config{Settings: settings, Frontier: hosts})
	if err != nil {
		t.Fatal(err)
	}
	minuteAgo := time.Now().Add(-time.Minute).UnixMilli()
	for i, leased := range []bool{false, true} {
		req := &spiders.Request{URL: site.URL + "/" + strconv.Itoa(i)}
		host := spiders.HostKey(req.URL)
		id := strconv.FormatInt(minuteAgo, 10) + "-" + strconv.Itoa(i)
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Requests, ID: id, Values: []any{"payload", "x"}}).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streams.StageFetch, Consumer: "f",
			Streams: []string{k.Requests, ">"}, Count: 1, Block: -1}).Err(); err != nil {
			t.Fatal(err)
		}
		if leased {
			rdb.ZAdd(ctx, k.Leases, redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: host + "|" + id})
			rdb.HSet(ctx, k.HostState(host), "f", 1)
		}
		before := served.Load()
		res, err := f.Do(ctx, req, Delivery{ID: id, Owner: "f"})
		res.Release()
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		sent := served.Load() - before
		switch {
		case !leased && (res.Outcome != Drop || res.Reason != DropRequeued || sent != 0):
			t.Errorf("request whose lease is gone: outcome %v (%s), %d sent; want dropped as requeued, none sent", res.Outcome, res.Reason, sent)
		case leased && (res.Outcome != Publish || sent != 1):
			t.Errorf("request still leased: outcome %v (%s), %d sent; want published, 1 sent", res.Outcome, res.Reason, sent)
		}
		if !leased {
			if n := rdb.LLen(ctx, k.HostQueues+host+"|0").Val(); n != 1 {
				t.Errorf("the unsent request's host queue holds %d, want it back (1)", n)
			}
		}
	}
}

// TestARequestWhoseSlotCannotBeCheckedComesAgain: a request handed out a minute ago must
// ask Redis whether its slot is still its own before it leaves; with Redis gone (a
// failover, an outage) the answer is an error for the delivery to come again: no
// request to the site and no dead letter (before: the check's error was taken for a
// final fetch error, and the page, never asked for, ended in the dead letters).
func TestARequestWhoseSlotCannotBeCheckedComesAgain(t *testing.T) {
	var served atomic.Int64
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Write([]byte("<html><body>ok</body></html>"))
	}))
	defer site.Close()
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	layout := streams.NewLayout("fence", 1)
	settings := spiders.Settings{AllowPrivateNetworks: true, ObeyRobots: new(bool), PerHostConcurrency: 2}
	hosts, err := frontier.New(frontier.Config{Client: rdb, Layout: layout, Hosts: frontier.HostRule{Concurrency: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer hosts.Close(ctx)
	f, err := New(Config{Settings: settings, Frontier: hosts})
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(time.Now().Add(-time.Minute).UnixMilli(), 10) + "-0"
	srv.Kill()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := f.Do(cctx, &spiders.Request{URL: site.URL + "/p"}, Delivery{ID: id, Owner: "f"})
	res.Release()
	if err == nil || res.Outcome == Dead || served.Load() != 0 {
		t.Errorf("slot check with Redis gone: outcome %v, error %v, %d sent; want an error (the delivery comes again), no dead letter, none sent",
			res.Outcome, err, served.Load())
	}
}
