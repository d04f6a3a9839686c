package processors

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

var crawled = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// product returns an item keyed by its url field.
func product(i int, extra map[string]any) *spiders.Item {
	f := map[string]any{"url": fmt.Sprintf("http://shop/p/%d", i), "name": fmt.Sprintf("p%d", i), "price": float64(i)}
	for k, v := range extra {
		f[k] = v
	}
	it := spiders.NewItem("product", f)
	it.URL = f["url"].(string)
	it.CrawledAt = crawled
	return &it
}

// readCSV returns all rows of path, header first; it fails on a malformed file.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s is not valid csv: %v", path, err)
	}
	return rows
}

func mustStore(t *testing.T, s Sink, it *spiders.Item, wantStored bool) {
	t.Helper()
	stored, err := s.Store(context.Background(), it)
	if err != nil {
		t.Fatalf("store %s: %v", it.Key(), err)
	}
	if stored != wantStored {
		t.Fatalf("store %s: stored=%v, want %v", it.Key(), stored, wantStored)
	}
}

func openCSV(t *testing.T, path string, cols []string) *CSV {
	t.Helper()
	s, err := OpenCSV(path, cols)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func keysOf(rows [][]string) []string {
	var keys []string
	for _, r := range rows[1:] {
		keys = append(keys, r[0])
	}
	return keys
}

func TestCSVReopenNoDuplicates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.csv")
	s := openCSV(t, path, nil)
	for i := 1; i <= 3; i++ {
		mustStore(t, s, product(i, nil), true)
	}
	mustStore(t, s, product(2, nil), false) // redelivered before the restart
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	s = openCSV(t, path, nil)
	for i := 1; i <= 3; i++ {
		mustStore(t, s, product(i, nil), false)
	}
	mustStore(t, s, product(4, nil), true)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	rows := readCSV(t, path)
	wantHeader := []string{"_key", "_type", "_url", "_crawled_at", "name", "price", "url"}
	if !reflect.DeepEqual(rows[0], wantHeader) {
		t.Errorf("header (-want +got):\n-%q\n+%q", wantHeader, rows[0])
	}
	var want []string
	for i := 1; i <= 4; i++ {
		want = append(want, product(i, nil).Key())
	}
	if got := keysOf(rows); !reflect.DeepEqual(got, want) {
		t.Errorf("keys (-want +got):\n-%q\n+%q", want, got)
	}
	wantRow := []string{`["product","http://shop/p/1"]`, "product", "http://shop/p/1", "2026-05-01T12:00:00Z", "p1", "1", "http://shop/p/1"}
	if !reflect.DeepEqual(rows[1], wantRow) {
		t.Errorf("row 1 (-want +got):\n-%q\n+%q", wantRow, rows[1])
	}
}

func TestCSVTornLastRow(t *testing.T) {
	for _, tc := range []struct {
		name string
		torn string
	}{
		{"mid row", `"[""product"",""http://shop/p/9""]",prod`},
		{"inside a quoted cell, after a newline", `"[""product"",""http://shop/p/9""]",product,http://shop/p/9,2026-05-01T12:00:00Z,"line one` + "\n"},
		{"inside the key", `"[""pro`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "items.csv")
			s := openCSV(t, path, nil)
			mustStore(t, s, product(1, nil), true)
			mustStore(t, s, product(2, nil), true)
			_ = s.Close(context.Background())
			good, _ := os.ReadFile(path)
			f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			_, _ = f.WriteString(tc.torn)
			_ = f.Close()

			s = openCSV(t, path, nil)
			if got, _ := os.ReadFile(path); string(got) != string(good) {
				t.Errorf("after open, file (-want +got):\n-%q\n+%q", good, got)
			}
			mustStore(t, s, product(2, nil), false)
			mustStore(t, s, product(9, nil), true)
			_ = s.Close(context.Background())
			want := []string{product(1, nil).Key(), product(2, nil).Key(), product(9, nil).Key()}
			if got := keysOf(readCSV(t, path)); !reflect.DeepEqual(got, want) {
				t.Errorf("keys (-want +got):\n-%q\n+%q", want, got)
			}
		})
	}
}

func TestCSVTornHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.csv")
	if err := os.WriteFile(path, []byte("_key,_ty"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := openCSV(t, path, []string{"_key", "name"})
	mustStore(t, s, product(1, nil), true)
	_ = s.Close(context.Background())
	want := [][]string{{"_key", "name"}, {product(1, nil).Key(), "p1"}}
	if got := readCSV(t, path); !reflect.DeepEqual(got, want) {
		t.Errorf("rows (-want +got):\n-%q\n+%q", want, got)
	}
}

func TestCSVMalformedFile(t *testing.T) {
	for name, content := range map[string]string{
		"field count": "_key,name\n[\"a\"],x\n[\"b\"],y,z\n[\"c\"],w\n",
		"no key col":  "name,price\nx,1\n",
		"empty key":   "_key,name\n,x\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "items.csv")
			_ = os.WriteFile(path, []byte(content), 0o644)
			s, err := OpenCSV(path, nil)
			if err == nil {
				_ = s.Close(context.Background())
				t.Fatal("open succeeded, want an error")
			}
			if !strings.HasPrefix(err.Error(), "processors: ") || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q should start with processors: and name the file", err)
			}
			if got, _ := os.ReadFile(path); string(got) != content {
				t.Errorf("a malformed file was changed: %q", got)
			}
		})
	}
}

func TestCSVHeader(t *testing.T) {
	ctx := context.Background()
	t.Run("from first item, later fields dropped", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "items.csv")
		s := openCSV(t, path, nil)
		if s.Columns() != nil {
			t.Errorf("columns before the first item = %q, want nil", s.Columns())
		}
		mustStore(t, s, product(1, map[string]any{"tags": []any{"a", "b"}, "stock": nil}), true)
		mustStore(t, s, product(2, map[string]any{"color": "red", "size": 3.5}), true)
		mustStore(t, s, product(3, map[string]any{"color": "blue"}), true)
		want := []string{"_key", "_type", "_url", "_crawled_at", "name", "price", "stock", "tags", "url"}
		if got := s.Columns(); !reflect.DeepEqual(got, want) {
			t.Errorf("columns (-want +got):\n-%q\n+%q", want, got)
		}
		wantDrops := map[string]int64{"color": 2, "size": 1}
		if got := s.DroppedFields(); !reflect.DeepEqual(got, wantDrops) {
			t.Errorf("dropped (-want +got):\n-%v\n+%v", wantDrops, got)
		}
		_ = s.Close(ctx)
		rows := readCSV(t, path)
		wantRow := []string{product(1, nil).Key(), "product", "http://shop/p/1", "2026-05-01T12:00:00Z", "p1", "1", "", `["a","b"]`, "http://shop/p/1"}
		if !reflect.DeepEqual(rows[1], wantRow) {
			t.Errorf("row 1 (-want +got):\n-%q\n+%q", wantRow, rows[1])
		}
		if got := rows[2][6]; got != "" {
			t.Errorf("missing field written as %q, want empty", got)
		}
	})
	t.Run("given columns, _key added, file header wins on reopen", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "items.csv")
		s := openCSV(t, path, []string{"name", "note", "url"})
		mustStore(t, s, product(1, map[string]any{"note": "a, \"quoted\"\nmulti-line <b>"}), true)
		_ = s.Close(ctx)

		s = openCSV(t, path, []string{"something", "else"})
		want := []string{"_key", "name", "note", "url"}
		if got := s.Columns(); !reflect.DeepEqual(got, want) {
			t.Errorf("columns after reopen (-want +got):\n-%q\n+%q", want, got)
		}
		mustStore(t, s, product(2, map[string]any{"note": map[string]any{"x": 1, "y": "<&>"}}), true)
		_ = s.Close(ctx)
		wantRows := [][]string{want,
			{product(1, nil).Key(), "p1", "a, \"quoted\"\nmulti-line <b>", "http://shop/p/1"},
			{product(2, nil).Key(), "p2", `{"x":1,"y":"<&>"}`, "http://shop/p/2"},
		}
		if got := readCSV(t, path); !reflect.DeepEqual(got, wantRows) {
			t.Errorf("rows (-want +got):\n-%q\n+%q", wantRows, got)
		}
	})
	t.Run("bad columns", func(t *testing.T) {
		for _, cols := range [][]string{{"a", "a"}, {"a", ""}} {
			if s, err := OpenCSV(filepath.Join(t.TempDir(), "x.csv"), cols); err == nil {
				_ = s.Close(ctx)
				t.Errorf("columns %q accepted, want an error", cols)
			}
		}
	})
}

func TestCSVConcurrentStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "items.csv")
	s := openCSV(t, path, nil)
	const workers, items = 64, 2000
	var stored, dups atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every item is stored by two workers: once stored, once a duplicate.
			for i := w; i < items*2; i += workers {
				ok, err := s.Store(context.Background(), product(i%items, nil))
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					stored.Add(1)
				} else {
					dups.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	_ = s.Close(context.Background())
	if stored.Load() != items || dups.Load() != items {
		t.Errorf("stored=%d dups=%d, want %d each", stored.Load(), dups.Load(), items)
	}
	rows := readCSV(t, path)
	seen := map[string]bool{}
	for _, k := range keysOf(rows) {
		if seen[k] {
			t.Fatalf("key %s written twice", k)
		}
		seen[k] = true
	}
	if len(seen) != items {
		t.Errorf("%d rows, want %d", len(seen), items)
	}
}
