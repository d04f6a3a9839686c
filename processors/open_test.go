package processors

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/processors/processorstest"
)

func TestOpenFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		out  string
		want string
	}{
		{"items.jsonl", "*processors.JSONL"},
		{"items", "*processors.JSONL"},
		{"items.csv", "*processors.CSV"},
		{"ITEMS.CSV", "*processors.CSV"},
		{"items.csv.jsonl", "*processors.JSONL"},
	} {
		s, err := Open(context.Background(), filepath.Join(dir, tc.out), nil)
		if err != nil {
			t.Errorf("%s: %v", tc.out, err)
			continue
		}
		if got := fmt.Sprintf("%T", s); got != tc.want {
			t.Errorf("%s: opened %s, want %s", tc.out, got, tc.want)
		}
		mustStore(t, s, product(1, nil), true)
		_ = s.Close(context.Background())
	}
	if _, err := Open(context.Background(), "", nil); err == nil || !strings.HasPrefix(err.Error(), "processors: ") {
		t.Errorf("empty out: err = %v", err)
	}
}

func TestOpenPostgres(t *testing.T) {
	t.Parallel()
	pg := processorstest.StartPostgres(t)
	db := dbPool(t, pg)
	for _, tc := range []struct {
		url, table string
	}{
		{pg.URL() + "&table=crawl_items", "crawl_items"},
		{"postgresql://postgres@" + pg.Addr + "/postgres?table=public.other&sslmode=disable", "other"},
		{"POSTGRES://postgres@" + pg.Addr + "/postgres", "items"},
	} {
		s, err := Open(context.Background(), tc.url, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if got := fmt.Sprintf("%T", s); got != "*processors.Postgres" {
			t.Errorf("%s: opened %s", tc.url, got)
		}
		mustStore(t, s, product(1, nil), true)
		_ = s.Close(context.Background())
		if n := queryInt(t, db, "SELECT count(*) FROM "+tc.table); n != 1 {
			t.Errorf("%s: %d rows in %s, want 1", tc.url, n, tc.table)
		}
	}
	for _, bad := range []string{
		"postgres://u:s3cret-pw@host:port/db",             // malformed: url.Parse would print it all
		"postgres://u:s3cret-pw@127.0.0.1:1/db?table=x;y", // not an identifier
	} {
		_, err := Open(context.Background(), bad, nil)
		if err == nil || !strings.HasPrefix(err.Error(), "processors: ") || strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("%s: err = %v, want a processors: error without the password", bad, err)
		}
	}
}
