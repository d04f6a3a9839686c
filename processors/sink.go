package processors

import (
	"context"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// Sink stores items durably. A new implementation runs processorstest.TestSink, the
// suite that checks this contract.
type Sink interface {
	// Store returns once it is durable, or already stored under the same key (then
	// stored is false). Safe for concurrent use; concurrent calls may share one write.
	Store(ctx context.Context, it *spiders.Item) (stored bool, err error)
	// Close flushes and releases the sink. Store must not be called after Close.
	Close(ctx context.Context) error
}
