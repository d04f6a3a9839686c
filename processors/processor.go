package processors

import (
	"context"
	"fmt"
	"strings"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// Processor looks at an item on its way to a sink: it may validate, clean or enrich it
// (change it in place), or drop it (keep = false). An error fails the item's delivery:
// it is retried, and after the stage's delivery limit it becomes a dead letter with that
// error. Processors must be safe for concurrent use.
type Processor interface {
	Process(ctx context.Context, it *spiders.Item) (keep bool, err error)
}

// ProcessorFunc adapts a function to Processor.
type ProcessorFunc func(ctx context.Context, it *spiders.Item) (bool, error)

// Process calls f.
func (f ProcessorFunc) Process(ctx context.Context, it *spiders.Item) (bool, error) {
	return f(ctx, it)
}

// Chain runs processors in order; the first that drops the item ends the chain.
type Chain []Processor

// Process runs the chain.
func (c Chain) Process(ctx context.Context, it *spiders.Item) (bool, error) {
	for _, p := range c {
		keep, err := p.Process(ctx, it)
		if err != nil || !keep {
			return keep, err
		}
	}
	return true, nil
}

// Require drops items that lack any of the fields (or have them empty).
func Require(fields ...string) Processor {
	return ProcessorFunc(func(_ context.Context, it *spiders.Item) (bool, error) {
		for _, f := range fields {
			v, ok := it.Fields[f]
			if !ok || v == nil || v == "" {
				return false, nil
			}
		}
		return true, nil
	})
}

// TrimSpace trims surrounding whitespace from every string field.
func TrimSpace() Processor {
	return ProcessorFunc(func(_ context.Context, it *spiders.Item) (bool, error) {
		for k, v := range it.Fields {
			if s, ok := v.(string); ok {
				it.Fields[k] = strings.TrimSpace(s)
			}
		}
		return true, nil
	})
}

// SetField sets a constant field on every item (tagging a source, a run, a replay).
func SetField(name string, value any) Processor {
	return ProcessorFunc(func(_ context.Context, it *spiders.Item) (bool, error) {
		it.Fields[name] = value
		return true, nil
	})
}

// ParseRequire turns "a,b,c" into Require(a, b, c); empty gives nil.
func ParseRequire(spec string) (Processor, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	var fields []string
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, fmt.Errorf("processors: empty field name in %q", spec)
		}
		fields = append(fields, f)
	}
	return Require(fields...), nil
}
