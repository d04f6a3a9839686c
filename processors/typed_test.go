package processors

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/streamcrawl/streamcrawl/processors/processorstest"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// typedFields are the values a YAML spider with typed fields gives (see spiders'
// fields): numbers, a whole number, lists, a list of rows, an object from JSON-LD.
func typedFields() map[string]any {
	return map[string]any{
		"url":    "http://shop/p/17",
		"name":   "Salt & Pepper <Mill>",
		"price":  1299.0,
		"id":     int64(17),
		"rating": 4.6,
		"neg":    -0.5,
		"big":    1e21,
		"tags":   []any{"a", "b <c>"},
		"specs":  []any{map[string]any{"name": "Width", "value": "45 cm"}, map[string]any{"name": "Care", "value": "dry, \"soft\" cloth"}},
		"offer":  map[string]any{"price": "1299.00", "available": true},
	}
}

// typedItem is an item of typedFields as a sink gets it: encoded by the parse stage
// and decoded by the store stage, as the items stream carries it.
func typedItem(t *testing.T) *spiders.Item {
	t.Helper()
	it := spiders.NewItem("product", typedFields())
	it.URL = "http://shop/p/17"
	it.CrawledAt = crawled
	b, err := spiders.MarshalItem(&it)
	if err != nil {
		t.Fatal(err)
	}
	got, err := spiders.UnmarshalItem(b)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// jsonValue returns v as JSON decodes it.
func jsonValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The JSONL sink writes typed values as JSON of their type: numbers as numbers, lists
// and objects as such.
func TestJSONLTypedFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.jsonl")
	s, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	mustStore(t, s, typedItem(t), true)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		t.Fatal("no line")
	}
	var rec map[string]any
	if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	for name, want := range jsonValue(t, typedFields()).(map[string]any) {
		if !reflect.DeepEqual(rec[name], want) {
			t.Errorf("%s: (-want +got)\n-%#v\n+%#v", name, want, rec[name])
		}
	}
}

// The CSV sink writes strings as they are and every other value as JSON, in one cell:
// what a spreadsheet shows, and what a reader decodes back to the value.
func TestCSVTypedFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.csv")
	s := openCSV(t, path, nil)
	mustStore(t, s, typedItem(t), true)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, path)
	if len(rows) != 2 {
		t.Fatalf("%d rows, want a header and one item", len(rows))
	}
	cell := map[string]string{}
	for i, col := range rows[0] {
		cell[col] = rows[1][i]
	}
	want := map[string]string{
		"url":    "http://shop/p/17",
		"name":   "Salt & Pepper <Mill>",
		"price":  "1299",
		"id":     "17",
		"rating": "4.6",
		"neg":    "-0.5",
		"big":    "1e+21",
		"tags":   `["a","b <c>"]`,
		"specs":  `[{"name":"Width","value":"45 cm"},{"name":"Care","value":"dry, \"soft\" cloth"}]`,
		"offer":  `{"available":true,"price":"1299.00"}`,
	}
	fields := jsonValue(t, typedFields()).(map[string]any)
	for name, w := range want {
		if cell[name] != w {
			t.Errorf("%s: cell (-want +got)\n-%s\n+%s", name, w, cell[name])
		}
		if _, isString := fields[name].(string); isString {
			continue
		}
		var back any
		if err := json.Unmarshal([]byte(cell[name]), &back); err != nil || !reflect.DeepEqual(back, fields[name]) {
			t.Errorf("%s: cell %s decodes to %#v (%v), want %#v", name, cell[name], back, err, fields[name])
		}
	}
}

// The PostgreSQL sink stores typed values in the fields jsonb as JSON of their type,
// so queries can compare numbers and open lists.
func TestPostgresTypedFields(t *testing.T) {
	t.Parallel()
	pg := processorstest.StartPostgres(t)
	db := dbPool(t, pg)
	s := openPostgres(t, pg, PostgresConfig{})
	it := typedItem(t)
	mustStore(t, s, it, true)
	var fields map[string]any
	if err := db.QueryRow(context.Background(), "SELECT fields FROM items WHERE key = $1", it.Key()).Scan(&fields); err != nil {
		t.Fatal(err)
	}
	if want := jsonValue(t, typedFields()); !reflect.DeepEqual(jsonValue(t, fields), want) {
		t.Errorf("fields (-want +got)\n-%v\n+%v", want, fields)
	}
	var priceType, tagsType, specName string
	var price float64
	err := db.QueryRow(context.Background(), `SELECT jsonb_typeof(fields->'price'), (fields->>'price')::float8,
		jsonb_typeof(fields->'tags'), fields->'specs'->1->>'name' FROM items WHERE key = $1`, it.Key()).
		Scan(&priceType, &price, &tagsType, &specName)
	if err != nil {
		t.Fatal(err)
	}
	if priceType != "number" || price != 1299 || tagsType != "array" || specName != "Care" {
		t.Errorf("jsonb: price %s %v, tags %s, specs[1].name %q; want number 1299, array, Care", priceType, price, tagsType, specName)
	}
}
