// Package processors holds what happens to items after a spider yields them: sinks that
// store them durably (JSONL files, ...) and, later, processors that validate, clean and
// enrich them on the way.
//
// A Sink's Store returns only after the item is durable (written and fsynced for files),
// because the store stage acks an item's stream entry as soon as Store returns. Sinks are
// idempotent by item key (spiders.Item.Key), so an item delivered again after a crash is
// not written twice.
package processors
