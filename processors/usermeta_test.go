package processors

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/processors/processorstest"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// withMeta returns product i with the request meta of a revisited page: the user's
// campaign and the crawler's own _revisit state.
func withMeta(i int) *spiders.Item {
	it := product(i, nil)
	it.Meta = map[string]any{"campaign": "spring", "_revisit": "60000:ec89898e7e9749d1:2e74"}
	return it
}

// No sink writes the crawler's own meta keys: the JSONL line's and the CSV row's _meta,
// and the PostgreSQL row's meta, hold the user's keys only (and none at all when only
// the crawler's were there).
func TestSinksWriteTheUsersMetaOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	only := product(2, nil)
	only.Meta = map[string]any{"_revisit": "60000:ec89898e7e9749d1:2e74"}

	jl, err := OpenJSONL(filepath.Join(dir, "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	mustStore(t, jl, withMeta(1), true)
	mustStore(t, jl, only, true)
	if err := jl.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "items.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	var metas []any
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		metas = append(metas, rec["_meta"])
	}
	if len(metas) != 2 || !jsonEqual(metas[0], map[string]any{"campaign": "spring"}) || metas[1] != nil {
		t.Errorf("JSONL _meta of the two lines %v, want {campaign: spring} and none", metas)
	}

	csvPath := filepath.Join(dir, "items.csv")
	cs, err := OpenCSV(csvPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustStore(t, cs, withMeta(1), true)
	if err := cs.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, csvPath)
	col := slices.Index(rows[0], "_meta")
	if col < 0 || len(rows) != 2 || rows[1][col] != `{"campaign":"spring"}` {
		t.Errorf("CSV rows %q, want a _meta column holding {\"campaign\":\"spring\"} only", rows)
	}

	pg := processorstest.StartPostgres(t)
	db := dbPool(t, pg)
	s := openPostgres(t, pg, PostgresConfig{})
	mustStore(t, s, withMeta(1), true)
	mustStore(t, s, only, true)
	var meta, none *string
	if err := db.QueryRow(context.Background(), "SELECT meta::text FROM items WHERE key = $1", withMeta(1).Key()).Scan(&meta); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(context.Background(), "SELECT meta::text FROM items WHERE key = $1", only.Key()).Scan(&none); err != nil {
		t.Fatal(err)
	}
	if meta == nil || *meta != `{"campaign": "spring"}` || none != nil {
		t.Errorf("PostgreSQL meta %v and %v, want {\"campaign\": \"spring\"} and NULL", deref(meta), deref(none))
	}
}

// The PostgreSQL sink creates its table with the columns PostgresColumns lists, a
// comment on each and on the table, and stores _changed: NULL for an item that is not
// versioned, {} for version 1, the changed fields for a later one. A table of the build
// before the changed column gets it, with its comment.
func TestPostgresTableHasCommentsAndChanged(t *testing.T) {
	t.Parallel()
	pg := processorstest.StartPostgres(t)
	db := dbPool(t, pg)
	ctx := context.Background()
	s := openPostgres(t, pg, PostgresConfig{})
	type column struct{ Name, Type, Comment string }
	columns := func(table string) []column {
		t.Helper()
		rows, err := db.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod), coalesce(col_description(a.attrelid, a.attnum), '')
			FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, table)
		if err != nil {
			t.Fatal(err)
		}
		var out []column
		for rows.Next() {
			var c column
			if err := rows.Scan(&c.Name, &c.Type, &c.Comment); err != nil {
				t.Fatal(err)
			}
			c.Type = strings.ReplaceAll(c.Type, "timestamp with time zone", "timestamptz")
			out = append(out, c)
		}
		return out
	}
	got := columns("items")
	if len(got) != len(PostgresColumns) {
		t.Fatalf("columns %v, want %d", got, len(PostgresColumns))
	}
	for i, c := range PostgresColumns {
		if got[i].Name != c.Name || !strings.HasPrefix(c.Type, got[i].Type) || got[i].Comment != c.Comment {
			t.Errorf("column %d: %+v, want %s %s commented %q", i, got[i], c.Name, c.Type, c.Comment)
		}
	}
	var comment string
	if err := db.QueryRow(ctx, "SELECT obj_description('items'::regclass, 'pg_class')").Scan(&comment); err != nil || comment != PostgresTableComment {
		t.Errorf("table comment %q (%v), want %q", comment, err, PostgresTableComment)
	}

	mustStore(t, s, product(1, nil), true)
	mustStore(t, s, versioned(2, 1, 20), true)
	mustStore(t, s, versioned(2, 2, 21), true)
	mustStore(t, s, versioned(3, 1, 30), true)
	for _, c := range []struct {
		key  string
		want *[]string
	}{{product(1, nil).Key(), nil}, {product(2, nil).Key(), &[]string{"price"}}, {product(3, nil).Key(), &[]string{}}} {
		var changed *[]string
		if err := db.QueryRow(ctx, "SELECT changed FROM items WHERE key = $1", c.key).Scan(&changed); err != nil {
			t.Fatal(err)
		}
		if (changed == nil) != (c.want == nil) || changed != nil && !slices.Equal(*changed, *c.want) {
			t.Errorf("row %s: changed %v, want %v", c.key, deref(changed), deref(c.want))
		}
	}

	// The table of the build before: version, no changed column.
	if _, err := db.Exec(ctx, `CREATE TABLE before (key text PRIMARY KEY, type text NOT NULL, url text NOT NULL,
		crawled_at timestamptz NOT NULL, fields jsonb NOT NULL, meta jsonb, stored_at timestamptz NOT NULL DEFAULT now(),
		version integer NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	old := openPostgres(t, pg, PostgresConfig{Table: "before"})
	mustStore(t, old, versioned(2, 2, 21), true)
	last := columns("before")
	if n := len(last); n != len(PostgresColumns) || last[n-1].Name != "changed" || last[n-1].Comment != PostgresColumns[n-1].Comment {
		t.Errorf("the table of the build before has %v, want the changed column added with its comment", last)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM before WHERE changed = '{price}'"); n != 1 {
		t.Errorf("%d rows with changed {price} in the table of the build before, want 1", n)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
