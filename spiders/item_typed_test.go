package spiders

import "testing"

// Typed field values (an int64 from type: int, lists, objects) cross the items stream
// as JSON and come back as float64, []any and map[string]any: the item's key and its
// version record must not change on the way, or a redelivered item would be taken
// for a new one and a revisit for a change.
func TestItemKeyAndRecordOfTypedFields(t *testing.T) {
	it := NewItem("product", map[string]any{
		"id":    int64(17),
		"price": 1299.0,
		"tags":  []any{"a", "b"},
		"specs": []any{map[string]any{"name": "Width", "value": "45 cm"}},
	})
	it.KeyFields = []string{"id", "tags"}
	b, err := MarshalItem(&it)
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalItem(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := back.Fields["id"].(float64); !ok {
		t.Fatalf("id came back as %T; the test expects JSON's float64", back.Fields["id"])
	}
	if want := `["product",17,["a","b"]]`; it.Key() != want || back.Key() != want {
		t.Errorf("keys %s before, %s after the wire; want %s", it.Key(), back.Key(), want)
	}
	before, err := NewItemRecord(&it, 1)
	if err != nil {
		t.Fatal(err)
	}
	after, err := NewItemRecord(back, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !before.Same(after) {
		t.Errorf("records differ across the wire: %x, %x", before.Bytes(), after.Bytes())
	}
	if miss := it.MissingKey(); miss != nil {
		t.Errorf("MissingKey = %v for an item with typed key fields", miss)
	}
}
