package spiders

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ItemVersion is the version of the item wire format written by this build.
const ItemVersion = 1

// Item is one scraped record. Fields holds what the spider extracted; the pipeline adds
// the type, the fetched URL and the crawl time when it stores the item.
type Item struct {
	// Type names the kind of item ("product"); it is written as _type.
	Type string `json:"type"`
	// Fields are the extracted values.
	Fields map[string]any `json:"fields"`
	// KeyFields names the fields that identify the item for idempotent sinks; empty
	// means the "url" field (or the fetched URL when the item has none). An item
	// missing one of them (absent, null or "") has no key (MissingKey): the parse stage
	// makes it a dead letter (missing_key), unless KeyByURL.
	KeyFields []string `json:"key_fields,omitempty"`
	// KeyByURL keys an item missing key fields by the fetched URL in their place,
	// instead of making it a dead letter (YAML: key_missing: url).
	KeyByURL bool `json:"key_by_url,omitempty"`
	// URL is the URL of the page the item came from (_url).
	URL string `json:"url"`
	// CrawledAt is when that page was fetched (_crawled_at).
	CrawledAt time.Time `json:"crawled_at"`
	// Meta is the meta of the request that produced the item, without the crawler's own
	// keys (UserMeta).
	Meta map[string]any `json:"meta,omitempty"`
	// Version is the item's version when items are versioned (Settings.ItemVersioned):
	// 1 the first time its key is emitted, one more each time its field values change
	// (_version). 0: not versioned.
	Version int `json:"version,omitempty"`
	// Changed names the fields whose values differ from the previous version, sorted
	// (_changed; a field the new version lacks is named too). Empty for version 1.
	Changed []string `json:"changed,omitempty"`
}

type itemWire struct {
	V int `json:"v"`
	*Item
}

// NewItem returns an item of type typ with the given fields.
func NewItem(typ string, fields map[string]any) Item {
	if fields == nil {
		fields = map[string]any{}
	}
	return Item{Type: typ, Fields: fields}
}

// Key identifies the item for idempotent sinks: a JSON array of its type and its key
// fields (by default the "url" field, or the fetched URL when the item has none), e.g.
// ["product","http://shop/p/1"].
func (it *Item) Key() string {
	parts := []any{it.Type}
	switch {
	case len(it.KeyFields) > 0:
		for _, k := range it.KeyFields {
			v := it.Fields[k]
			if it.KeyByURL && missing(v) {
				v = it.URL
			}
			parts = append(parts, v)
		}
	case it.Fields["url"] != nil:
		parts = append(parts, it.Fields["url"])
	default:
		parts = append(parts, it.URL)
	}
	b, err := json.Marshal(parts)
	if err != nil {
		return fmt.Sprint(parts...)
	}
	return string(b)
}

// MissingKey returns the key fields the item lacks (absent, null or ""): such an item
// has no key of its own, and keyed as it is (["product",null]) every other one like it
// would be taken for a duplicate and dropped. Nil when it has them all, has no
// KeyFields, or is KeyByURL.
func (it *Item) MissingKey() []string {
	if it.KeyByURL {
		return nil
	}
	var out []string
	for _, k := range it.KeyFields {
		if missing(it.Fields[k]) {
			out = append(out, k)
		}
	}
	return out
}

// missing reports a key field's value that identifies nothing: none, null or "".
func missing(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return strings.TrimSpace(x) == ""
	}
	return false
}

// Record returns the item as it is written by sinks: the fields plus _type, _url,
// _crawled_at (RFC 3339, UTC), when the request carried any of the user's, _meta (never
// the crawler's own keys: UserMeta; the credentials of URLs in its strings, a proxy's,
// left out: RedactText), and when the item is versioned, _version and _changed.
func (it *Item) Record() map[string]any {
	rec := make(map[string]any, len(it.Fields)+3)
	for k, v := range it.Fields {
		rec[k] = v
	}
	rec["_type"] = it.Type
	rec["_url"] = it.URL
	rec["_crawled_at"] = it.CrawledAt.UTC().Format(time.RFC3339Nano)
	if meta := UserMeta(it.Meta); len(meta) > 0 {
		rec["_meta"] = redactedMeta(meta)
	}
	if it.Version > 0 {
		rec["_version"] = it.Version
		changed := it.Changed
		if changed == nil {
			changed = []string{}
		}
		rec["_changed"] = changed
	}
	return rec
}

// FieldNames returns the item's field names, sorted.
func (it *Item) FieldNames() []string { return slices.Sorted(maps.Keys(it.Fields)) }

// MarshalItem encodes it in the versioned wire format.
func MarshalItem(it *Item) ([]byte, error) {
	return json.Marshal(itemWire{V: ItemVersion, Item: it})
}

// UnmarshalItem decodes an item written by MarshalItem.
func UnmarshalItem(b []byte) (*Item, error) {
	w := itemWire{Item: &Item{}}
	if err := decodeVersioned(b, &w, &w.V, ItemVersion, "item"); err != nil {
		return nil, err
	}
	if w.Type == "" {
		return nil, fmt.Errorf("spiders: item has no type")
	}
	if w.Fields == nil {
		w.Fields = map[string]any{}
	}
	return w.Item, nil
}

// redactedMeta is meta with RedactText applied to its string values (a copy when one
// changes): a request's "proxy" meta holds the proxy's credentials.
func redactedMeta(meta map[string]any) map[string]any {
	out, copied := meta, false
	for k, v := range meta {
		s, ok := v.(string)
		if !ok {
			continue
		}
		if r := RedactText(s); r != s {
			if !copied {
				out, copied = maps.Clone(meta), true
			}
			out[k] = r
		}
	}
	return out
}
