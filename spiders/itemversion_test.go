package spiders_test

import (
	"slices"
	"testing"

	"github.com/streamcrawl/streamcrawl/spiders"
)

func record(t *testing.T, fields map[string]any, version int) spiders.ItemRecord {
	t.Helper()
	it := spiders.NewItem("product", fields)
	r, err := spiders.NewItemRecord(&it, version)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A record survives its encoding, is 1 byte of version and 8 per field, and tells the
// fields that changed, appeared or went (by the name the caller knew) from the last
// version; the page, time and meta of an item are not part of it.
func TestItemRecordChangedFields(t *testing.T) {
	t.Parallel()
	v1 := record(t, map[string]any{"url": "http://shop/p/1", "price": 10.5, "name": "tea", "tags": []any{"a", "b"}, "stock": 3}, 1)
	if b := v1.Bytes(); len(b) != 1+8*5 {
		t.Fatalf("record of 5 fields: %d bytes, want 41", len(b))
	}
	back, err := spiders.ParseItemRecord(v1.Bytes())
	if err != nil || back.Version != 1 || !back.Same(v1) {
		t.Fatalf("decoded record: version %d, same %v, err %v", back.Version, back.Same(v1), err)
	}
	same := spiders.NewItem("product", map[string]any{"url": "http://shop/p/1", "price": 10.5, "name": "tea", "tags": []any{"a", "b"}, "stock": 3})
	same.URL, same.Meta = "http://shop/other-page", map[string]any{"x": 1}
	r, err := spiders.NewItemRecord(&same, 2)
	if err != nil || !r.Same(back) {
		t.Fatalf("the same values from another page: same %v, err %v", r.Same(back), err)
	}
	v2 := record(t, map[string]any{"url": "http://shop/p/1", "price": 9.5, "name": "tea", "tags": []any{"b", "a"}, "sale": true}, 2)
	if v2.Same(back) {
		t.Fatal("changed values taken for the same")
	}
	known := map[uint32]string{}
	v1.Names(func(h uint32, n string) { known[h] = n })
	got := v2.Changed(back, func(h uint32) (string, bool) { n, ok := known[h]; return n, ok })
	if want := []string{"price", "sale", "stock", "tags"}; !slices.Equal(got, want) {
		t.Fatalf("changed %v, want %v", got, want)
	}
	got = v2.Changed(back, nil)
	if len(got) != 4 || !slices.Contains(got, "price") || slices.Contains(got, "stock") {
		t.Fatalf("changed without known names %v, want price, sale, tags and stock by its hash", got)
	}
	for _, bad := range [][]byte{{0x80}, {1, 2, 3}, {0}} {
		if _, err := spiders.ParseItemRecord(bad); err == nil {
			t.Errorf("malformed record %x decoded", bad)
		}
	}
}

// Versions are on by default only when pages are fetched again, never without item
// dedup, and item_versions: true without dedup_items is refused.
func TestItemVersionedDefault(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	cases := []struct {
		s    spiders.Settings
		want bool
	}{
		{spiders.Settings{}, false},
		{spiders.Settings{Revisit: spiders.RevisitSettings{After: 3600e9}}, true},
		{spiders.Settings{Revisit: spiders.RevisitSettings{Rules: []spiders.RevisitRule{{Min: 60e9, Max: 120e9}}}}, true},
		{spiders.Settings{ItemVersions: &yes}, true},
		{spiders.Settings{Revisit: spiders.RevisitSettings{After: 3600e9}, ItemVersions: &no}, false},
		{spiders.Settings{Revisit: spiders.RevisitSettings{After: 3600e9}, DedupItems: &no}, false},
	}
	for i, c := range cases {
		if got := c.s.ItemVersioned(); got != c.want {
			t.Errorf("case %d: ItemVersioned %v, want %v", i, got, c.want)
		}
	}
	bad := spiders.Settings{ItemVersions: &yes, DedupItems: &no}
	if err := bad.Validate(); err == nil {
		t.Error("item_versions without dedup_items accepted")
	}
}
