package dedup_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/dedup"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestExpireAfter drives the expiry clock (ClockShift, as the revisit tests drive the
// revisit schedule's) through the generations of expire_after 1h (4 of 15 minutes),
// in exact and bloom mode, through the Deduper's own scripts and the frontier's emit:
// 100 URLs recorded 30 s into a generation are still seen 1h less 30 s later and 1h15m
// less 30 s later (the last generation that reads theirs), and new again at 1h15m
// (between expire_after and expire_after*(1+1/4), never earlier); 100 URLs recorded
// a generation later are still seen then. DropExpired then deletes the first
// generation's keys, all of them, and no other.
func TestExpireAfter(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	for _, mode := range []dedup.Mode{dedup.Exact, dedup.Bloom} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			rdb := srv.Client()
			ctx := context.Background()
			crawl := "expire-" + string(mode)
			const expire = time.Hour
			period := expire / dedup.ExpireGenerations
			now, err := rdb.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			// v0: 30 s into the next generation, on the expiry clock.
			gen0 := now.UnixMilli()/period.Milliseconds() + 1
			v0 := time.UnixMilli(gen0 * period.Milliseconds()).Add(30 * time.Second)
			at := func(d time.Duration) (*dedup.Deduper, *frontier.Frontier) {
				shift := v0.Add(d).Sub(now)
				dd, err := dedup.Open(ctx, rdb, streams.NewLayout(crawl, 1),
					dedup.Config{Mode: mode, Capacity: 10_000, ExpireAfter: expire, ClockShift: shift}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !dd.Expires() {
					t.Fatal("Expires() is false with expire_after set")
				}
				f, err := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(crawl, 1), Dedup: dd, SeenCache: -1})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = f.Close(context.Background()) })
				return dd, f
			}
			a, b := fingerprints(crawl+"/a", 100), fingerprints(crawl+"/b", 100)
			newOf := func(when string, d *dedup.Deduper, fps [][]byte, want int) {
				t.Helper()
				got, err := d.Add(ctx, fps)
				if err != nil {
					t.Fatal(err)
				}
				if count(got, true) != want {
					t.Errorf("%s: %d of %d new, want %d", when, count(got, true), len(fps), want)
				}
			}
			emitNew := func(when string, f *frontier.Frontier, fps [][]byte, want int) {
				t.Helper()
				cands := make([]frontier.Candidate, len(fps))
				for i, fp := range fps {
					cands[i] = frontier.Candidate{Fingerprint: fp, Payload: []byte(when + strconv.Itoa(i)), Host: "h"}
				}
				e, err := f.Emit(ctx, 0, cands, nil)
				if err != nil {
					t.Fatal(err)
				}
				if e.Requests != want || e.DuplicateRequests != len(fps)-want {
					t.Errorf("%s: emit queued %d, %d duplicates; want %d queued", when, e.Requests, e.DuplicateRequests, want)
				}
			}

			d, f := at(0)
			emitNew("first emit", f, a, 100)
			newOf("at once", d, a, 0)
			d, _ = at(period)
			newOf("a generation later, b", d, b, 100)
			newOf("a generation later, a", d, a, 0)
			d, f = at(expire - time.Minute) // 1h less 30 s after a was recorded
			newOf("just before expire_after", d, a, 0)
			emitNew("just before expire_after, emit", f, a[:10], 0)
			d, _ = at(expire + period - time.Minute) // the last generation that reads a's
			newOf("just before expire_after*(1+1/4)", d, a, 0)

			d, f = at(expire + period)
			emitNew("after expire_after*(1+1/4), emit", f, a[:50], 50)
			newOf("after expire_after*(1+1/4)", d, a, 50) // the other 50; the emitted ones are new again and recorded
			newOf("b, a generation younger", d, b, 0)

			first := genKeys(t, rdb, crawl, gen0)
			if first == 0 || genKeys(t, rdb, crawl, gen0+1) == 0 {
				t.Fatalf("generation keys before DropExpired: first %d, second %d; want some of each", first, genKeys(t, rdb, crawl, gen0+1))
			}
			n, err := d.DropExpired(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(first) || genKeys(t, rdb, crawl, gen0) != 0 || genKeys(t, rdb, crawl, gen0+1) == 0 {
				t.Errorf("DropExpired deleted %d keys (the first generation had %d); left %d of it and %d of the second",
					n, first, genKeys(t, rdb, crawl, gen0), genKeys(t, rdb, crawl, gen0+1))
			}
			newOf("b after DropExpired", d, b, 0)
		})
	}
}

// genKeys returns how many keys expiry generation gen of crawl has.
func genKeys(t *testing.T, rdb redis.UniversalClient, crawl string, gen int64) int {
	t.Helper()
	keys, err := rdb.Keys(context.Background(), streams.NewKeys(crawl).Seen+":g"+strconv.FormatInt(gen, 10)+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(keys)
}

func TestExpireAfterValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []dedup.Config{{ExpireAfter: time.Second}, {ExpireAfter: -time.Hour}, {Mode: dedup.Set, ExpireAfter: time.Hour}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if err := (dedup.Config{Mode: dedup.Bloom, ExpireAfter: time.Minute}).Validate(); err != nil {
		t.Errorf("bloom, 1m: %v", err)
	}
}
