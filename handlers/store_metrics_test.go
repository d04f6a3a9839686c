package handlers

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/streamcrawl/streamcrawl/handlers/metrics"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// TestPostProcessorItemsCountPerSink: a post-processor's store counts each item it
// writes under its sink, and not an item its sink already had.
func TestPostProcessorItemsCountPerSink(t *testing.T) {
	t.Parallel()
	sink, err := processors.OpenJSONL(filepath.Join(t.TempDir(), "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close(context.Background())
	m := metrics.New(metrics.Config{Sink: "jsonl"})
	s, err := newStorer(sink, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.stored = m.ItemStored
	for _, url := range []string{"http://a/1", "http://a/2", "http://a/1"} {
		it := spiders.NewItem("product", map[string]any{"url": url})
		payload, err := spiders.MarshalItem(&it)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.handle(message.NewMessage(watermill.NewUUID(), payload)); err != nil {
			t.Fatal(err)
		}
	}
	want := "# HELP streamcrawl_items_stored_total Items the store stage wrote to its sink.\n# TYPE streamcrawl_items_stored_total counter\nstreamcrawl_items_stored_total{sink=\"jsonl\"} 2\n"
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "streamcrawl_items_stored_total"); err != nil {
		t.Error(err)
	}
}
