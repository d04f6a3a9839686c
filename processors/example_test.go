package processors_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// Open picks the sink from the output's name: a postgres:// URL, a .csv file, or JSONL.
// Storing an item again (a redelivery after a crash) does not write it twice.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "books.csv")

	sink, err := processors.Open(ctx, path, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	it := spiders.NewItem("book", map[string]any{"url": "http://shop/b/1", "title": "Dune", "pages": 412})
	it.URL, it.CrawledAt = "http://shop/b/1", time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for range 2 {
		stored, err := sink.Store(ctx, &it)
		fmt.Println("stored:", stored, err)
	}
	if err := sink.Close(ctx); err != nil {
		fmt.Println(err)
	}
	b, _ := os.ReadFile(path)
	fmt.Print(string(b))
	// Output:
	// stored: true <nil>
	// stored: false <nil>
	// _key,_type,_url,_crawled_at,pages,title,url
	// "[""book"",""http://shop/b/1""]",book,http://shop/b/1,2026-05-01T12:00:00Z,412,Dune,http://shop/b/1
}
