package processors

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/streamcrawl/streamcrawl/processors/processorstest"
)

// BenchmarkPostgresInsertMethod compares the sink's one-statement INSERT ... SELECT FROM
// unnest(arrays) with the other way to send a batch: COPY into a temporary table, then
// INSERT ... SELECT ... ON CONFLICT DO NOTHING from it, in one transaction. It is why the
// sink uses unnest: one round trip instead of four.
func BenchmarkPostgresInsertMethod(b *testing.B) {
	ctx := context.Background()
	pg := processorstest.StartPostgres(b)
	s, err := OpenPostgres(ctx, PostgresConfig{URL: pg.URL(), Writers: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(ctx)
	for _, size := range []int{1, 50, 500} {
		for _, m := range []struct {
			name   string
			insert func(context.Context, []*pgReq) error
		}{
			{"unnest", s.insert},
			{"copy", s.copyInsert},
		} {
			b.Run(fmt.Sprintf("%s/batch=%d", m.name, size), func(b *testing.B) {
				start := time.Now()
				for b.Loop() {
					rows := make([]*pgReq, size)
					for i := range rows {
						rows[i], _ = newPgReq(product(int(next.Add(1)), nil))
					}
					slices.SortFunc(rows, func(a, b *pgReq) int { return strings.Compare(a.key, b.key) })
					if err := m.insert(ctx, rows); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*size)/time.Since(start).Seconds(), "items/s")
			})
		}
	}
}

// copyInsert is insert done with COPY through a temporary table.
func (s *Postgres) copyInsert(ctx context.Context, rows []*pgReq) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS sc_batch (key text, type text, url text,
			crawled_at timestamptz, fields jsonb, meta jsonb) ON COMMIT DELETE ROWS`); err != nil {
			return err
		}
		src := pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			r := rows[i]
			var meta any
			if r.meta != "" {
				meta = r.meta
			}
			return []any{r.key, r.typ, r.url, r.crawledAt, r.fields, meta}, nil
		})
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"sc_batch"},
			[]string{"key", "type", "url", "crawled_at", "fields", "meta"}, src); err != nil {
			return err
		}
		res, err := tx.Query(ctx, fmt.Sprintf(`INSERT INTO %s (key, type, url, crawled_at, fields, meta)
			SELECT * FROM sc_batch ORDER BY key ON CONFLICT (key) DO NOTHING RETURNING key`, s.table))
		if err != nil {
			return err
		}
		inserted := map[string]bool{}
		var key string
		_, err = pgx.ForEachRow(res, []any{&key}, func() error { inserted[key] = true; return nil })
		for _, r := range rows {
			r.stored = inserted[r.key]
		}
		return err
	})
}
