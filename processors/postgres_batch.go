package processors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
)

// insertSQL inserts a batch given as parallel arrays and returns the keys it inserted
// or updated: a key already in the table is updated only by a greater version (a
// versioned item's next version; 0 for an item not versioned, which never updates),
// so an old version delivered again never overwrites a newer row. %[1]s is the
// quoted table name.
//
// $1 -> keys, $2 -> types, $3 -> urls (text[]), $4 -> crawl times (timestamptz[]),
// $5 -> fields as JSON, $6 -> meta as JSON, "" for none (text[]), $7 -> versions
// (int[]), $8 -> changed fields as a JSON array, "" for none (text[]; an array of
// arrays would not unnest row by row).
// Output: one row per inserted or updated key.
//
// The rows go in the order given; the writers sort each batch by key, so two batches
// (of this process or another) that share keys wait for each other in the same order
// and cannot deadlock.
const insertSQL = `INSERT INTO %[1]s AS old (key, type, url, crawled_at, fields, meta, version, changed)
SELECT k, t, u, c, f::jsonb, NULLIF(m, '')::jsonb, v,
  CASE WHEN ch = '' THEN NULL ELSE ARRAY(SELECT e FROM jsonb_array_elements_text(ch::jsonb) WITH ORDINALITY AS x(e, n) ORDER BY n) END
FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::int[], $8::text[]) AS b(k, t, u, c, f, m, v, ch)
ON CONFLICT (key) DO UPDATE SET type = EXCLUDED.type, url = EXCLUDED.url, crawled_at = EXCLUDED.crawled_at,
  fields = EXCLUDED.fields, meta = EXCLUDED.meta, version = EXCLUDED.version, changed = EXCLUDED.changed, stored_at = now()
WHERE old.version < EXCLUDED.version
RETURNING key`

// collect gathers Store calls into batches for the writers. A batch is handed over when
// it is full, or when it has waited FlushInterval, or as soon as no further call is
// queued; while every writer is busy it keeps growing up to BatchSize.
func (s *Postgres) collect() {
	defer s.wg.Done()
	defer close(s.batches)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	var batch []*pgReq
	lingered := false
	in := s.reqs
	for in != nil || len(batch) > 0 {
		full := len(batch) >= s.cfg.BatchSize
		var out chan<- []*pgReq
		if full || (len(batch) > 0 && (lingered || in == nil || len(s.reqs) == 0)) {
			out = s.batches
		}
		recv := in
		if full {
			recv = nil
		}
		select {
		case r, ok := <-recv:
			if !ok {
				in = nil
				continue
			}
			batch = append(batch, r)
			if len(batch) == 1 {
				lingered = false
				linger.Reset(s.cfg.FlushInterval)
			}
		case out <- batch:
			batch = nil
			linger.Stop()
		case <-linger.C:
			lingered = true
		}
	}
}

// write runs one writer: it inserts the batches it is handed and answers their callers.
func (s *Postgres) write() {
	defer s.wg.Done()
	for batch := range s.batches {
		s.writeBatch(batch)
	}
}

// writeBatch inserts batch with one statement. Calls sharing a key are answered by the
// one of the greatest version (the first among equals): it alone is sent. When the server rejects the batch for the data of some row,
// the rows are sent again one by one, so that only the bad one fails.
func (s *Postgres) writeBatch(batch []*pgReq) {
	first := make(map[string]*pgReq, len(batch))
	rows := make([]*pgReq, 0, len(batch))
	for _, r := range batch {
		if f, ok := first[r.key]; ok {
			if r.version > f.version { // a newer version of the key in the same batch
				f.dupOf, first[r.key] = r, r
				rows[f.row], r.row = r, f.row
				continue
			}
			r.dupOf = f
			continue
		}
		first[r.key] = r
		r.row = len(rows)
		rows = append(rows, r)
	}
	for _, r := range batch {
		for r.dupOf != nil && r.dupOf.dupOf != nil {
			r.dupOf = r.dupOf.dupOf // answered by the newest
		}
	}
	slices.SortFunc(rows, func(a, b *pgReq) int { return strings.Compare(a.key, b.key) })

	err := s.insertTimed(rows)
	if err != nil && len(rows) > 1 && isDataError(err) {
		for _, r := range rows {
			r.err = s.insertTimed([]*pgReq{r})
		}
	} else {
		for _, r := range rows {
			r.err = err
		}
	}
	var stored, dups int64
	for _, r := range batch {
		if r.dupOf != nil {
			r.err = r.dupOf.err
		}
		if r.err == nil {
			if r.stored {
				stored++
			} else {
				dups++
			}
		}
	}
	// The figures first: a caller whose Store returned reads Stats with its item in them.
	s.stats.stored.Add(stored)
	s.stats.dups.Add(dups)
	for _, r := range batch {
		r.done <- r.err
	}
}

// insertTimed inserts rows under the sink's context and WriteTimeout, logging failures
// (at most one line a second).
func (s *Postgres) insertTimed(rows []*pgReq) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.WriteTimeout)
	defer cancel()
	err := s.insert(ctx, rows)
	if err != nil {
		s.errLog.Warn("postgres batch failed", err, zap.Int("items", len(rows)))
	}
	return err
}

// insert sends rows as one statement and sets stored on those it inserted.
func (s *Postgres) insert(ctx context.Context, rows []*pgReq) error {
	n := len(rows)
	keys, types, urls := make([]string, n), make([]string, n), make([]string, n)
	fields, metas, changed := make([]string, n), make([]string, n), make([]string, n)
	times, versions := make([]time.Time, n), make([]int32, n)
	for i, r := range rows {
		keys[i], types[i], urls[i], times[i], fields[i], metas[i], versions[i] = r.key, r.typ, r.url, r.crawledAt, r.fields, r.meta, r.version
		changed[i] = r.changed
	}
	if n > 0 {
		s.stats.batches.Add(1)
		s.stats.rows.Add(int64(n))
	}
	res, err := s.pool.Query(ctx, s.ins, keys, types, urls, times, fields, metas, versions, changed)
	if err == nil {
		inserted := make(map[string]struct{}, n)
		var key string
		_, err = pgx.ForEachRow(res, []any{&key}, func() error {
			inserted[key] = struct{}{}
			return nil
		})
		for _, r := range rows {
			_, r.stored = inserted[r.key]
		}
	}
	if err != nil {
		if n > 0 {
			s.stats.failed.Add(1)
		}
		return fmt.Errorf("processors: insert %d items into postgres table %s: %w", n, s.table, err)
	}
	return nil
}

// isDataError reports whether the server rejected a statement for the values of a row
// (a data exception, a constraint of the user's, a value too large for an index), which
// sending the rows one by one can pin on one item.
func isDataError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) < 2 {
		return false
	}
	class := pgErr.Code[:2]
	return class == "22" || class == "23" || class == "54"
}
