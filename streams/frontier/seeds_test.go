package frontier_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

func TestSortedSetSeedsAreTakenHighestScoreFirst(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	if err := rdb.ZAdd(ctx, streams.NewKeys("zs").Seeds, zmember(1, "http://a.test/low"), zmember(10, "http://a.test/high"),
		zmember(5, "http://a.test/mid")).Err(); err != nil {
		t.Fatal(err)
	}
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout("zs", 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	var got []string
	for range 3 {
		_, _, err := f.TakeSeeds(ctx, 1, func(raw string) (*frontier.Candidate, error) {
			got = append(got, raw)
			return nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := "http://a.test/high http://a.test/mid http://a.test/low"; strings.Join(got, " ") != want {
		t.Errorf("taken (-want +got):\n-%s\n+%s", want, strings.Join(got, " "))
	}
}

func TestSeedKeyOfAnotherTypeIsAnError(t *testing.T) {
	rdb := streamstest.Start(t).Client()
	ctx := context.Background()
	if err := rdb.HSet(ctx, streams.NewKeys("hs").Seeds, "url", "http://a.test/").Err(); err != nil {
		t.Fatal(err)
	}
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout("hs", 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	_, _, err = f.TakeSeeds(ctx, 10, nil)
	var ke *rkit.SeedKeyError
	if !errors.As(err, &ke) || ke.Type != "hash" || !errors.Is(err, frontier.ErrSeedKeyType) {
		t.Fatalf("Take: %v, want a SeedKeyError for a hash", err)
	}
	if err := frontier.CheckSeedKey(ctx, rdb, "hs"); !errors.Is(err, frontier.ErrSeedKeyType) ||
		!strings.Contains(err.Error(), "hs:start_urls is a hash") {
		t.Fatalf("CheckSeedKey: %v", err)
	}
	st, err := inspect.ReadStatus(ctx, rdb, streams.NewLayout("hs", 1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Done || !strings.Contains(st.SeedError, "is a hash") {
		t.Errorf("status: done=%v seed_error=%q; want not done and the error", st.Done, st.SeedError)
	}
}

func zmember(score float64, m string) redis.Z { return redis.Z{Score: score, Member: m} }
