package processors

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/processors/processorstest"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// versioned returns product i at version v with price p.
func versioned(i, v int, price float64) *spiders.Item {
	it := product(i, map[string]any{"price": price})
	it.Version = v
	if v > 1 {
		it.Changed = []string{"price"}
	}
	return it
}

// The Postgres sink upserts versioned items: a newer version replaces its key's row, a
// redelivered older one (alone or in the same batch) leaves it, and items that are not
// versioned keep insert-once. A table from before versions gets its version column.
func TestPostgresUpsertsNewerVersions(t *testing.T) {
	t.Parallel()
	pg := processorstest.StartPostgres(t)
	db := dbPool(t, pg)
	ctx := context.Background()
	// A table created before item versions (no version column), holding one row.
	if _, err := db.Exec(ctx, `CREATE TABLE items (key text PRIMARY KEY, type text NOT NULL, url text NOT NULL,
		crawled_at timestamptz NOT NULL, fields jsonb NOT NULL, meta jsonb, stored_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO items (key, type, url, crawled_at, fields) VALUES ('old', 'product', 'u', now(), '{}')`); err != nil {
		t.Fatal(err)
	}
	s := openPostgres(t, pg, PostgresConfig{})
	mustStore(t, s, versioned(1, 1, 10), true)
	mustStore(t, s, versioned(2, 1, 20), true)
	mustStore(t, s, versioned(1, 2, 11), true)  // the new price replaces the row
	mustStore(t, s, versioned(1, 1, 10), false) // version 1 redelivered late: no change
	mustStore(t, s, versioned(1, 2, 11), false) // version 2 redelivered: no change
	mustStore(t, s, product(3, nil), true)      // not versioned: insert once
	mustStore(t, s, product(3, map[string]any{"price": 99.0}), false)

	// Versions 3, 5, 4 and 5 again of product 2 in one batch: version 5 alone is sent.
	var batch []*pgReq
	for _, v := range []int{3, 5, 4, 5} {
		r, err := newPgReq(versioned(2, v, 20+float64(v)))
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, r)
	}
	rows := s.Stats().Rows
	s.writeBatch(batch)
	for i, r := range batch {
		if err := <-r.done; err != nil {
			t.Fatalf("batch item %d: %v", i, err)
		}
		if r.stored != (i == 1) {
			t.Errorf("batch item %d (version %d): stored %v, want only the first version 5 stored", i, r.version, r.stored)
		}
	}
	if sent := s.Stats().Rows - rows; sent != 1 {
		t.Errorf("a batch of 4 versions of one key sent %d rows, want 1", sent)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM items"); n != 4 {
		t.Fatalf("%d rows, want 4 (old, products 1, 2, 3)", n)
	}
	for _, c := range []struct {
		key            string
		version, price int
	}{{product(1, nil).Key(), 2, 11}, {product(2, nil).Key(), 5, 25}, {product(3, nil).Key(), 0, 3}, {"old", 0, -1}} {
		var version int
		var price *float64
		if err := db.QueryRow(ctx, "SELECT version, (fields->>'price')::float8 FROM items WHERE key = $1", c.key).Scan(&version, &price); err != nil {
			t.Fatal(err)
		}
		got := -1
		if price != nil {
			got = int(*price)
		}
		if version != c.version || got != c.price {
			t.Errorf("row %s: version %d, price %d; want %d, %d", c.key, version, got, c.version, c.price)
		}
	}
}

// The file sinks append each new version of a key and skip a redelivered version,
// before and after a reopen.
func TestFileSinksAppendNewVersions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, kind := range []string{"jsonl", "csv"} {
		path := filepath.Join(dir, "items."+kind)
		open := func() Sink {
			var s Sink
			var err error
			if kind == "jsonl" {
				s, err = OpenJSONL(path)
			} else {
				s, err = OpenCSV(path, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		s := open()
		mustStore(t, s, versioned(1, 1, 10), true)
		mustStore(t, s, versioned(1, 2, 11), true)
		mustStore(t, s, versioned(1, 1, 10), false)
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		s = open()
		mustStore(t, s, versioned(1, 2, 11), false)
		mustStore(t, s, versioned(1, 3, 12), true)
		if err := s.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		var versions []string
		if kind == "jsonl" {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var rec struct {
					Version json.Number `json:"_version"`
					Changed []string    `json:"_changed"`
				}
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatal(err)
				}
				versions = append(versions, rec.Version.String()+":"+strings.Join(rec.Changed, ","))
			}
		} else {
			rows := readCSV(t, path)
			col := map[string]int{}
			for i, c := range rows[0] {
				col[c] = i
			}
			for _, r := range rows[1:] {
				versions = append(versions, r[col["_version"]]+":"+strings.Trim(r[col["_changed"]], `[]"`))
			}
		}
		if got, want := strings.Join(versions, " "), "1: 2:price 3:price"; got != want {
			t.Errorf("%s: versions written %q, want %q", kind, got, want)
		}
	}
}
