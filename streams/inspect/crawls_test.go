package inspect_test

import (
	"context"
	"slices"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestListCrawlsFindsTheCrawlsByTheirMetaHash: crawls with a meta hash are listed,
// sorted; other keys of a crawl and keys of other programs are not.
func TestListCrawlsFindsTheCrawlsByTheirMetaHash(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	for _, name := range []string{"shop", "books"} {
		if err := rdb.HSet(ctx, streams.NewLayout(name, 1).Global.Meta, "v", 1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{streams.NewLayout("news", 1).Global.Stats, "meta", "other:{x}:meta"} {
		if err := rdb.Set(ctx, k, 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := inspect.ListCrawls(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"books", "shop"}; !slices.Equal(got, want) {
		t.Fatalf("crawls %v, want %v", got, want)
	}
}
