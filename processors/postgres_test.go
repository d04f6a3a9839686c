package processors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamcrawl/streamcrawl/processors/processorstest"
)

// openPostgres opens a sink on pg, closed when the test ends.
func openPostgres(t *testing.T, pg *processorstest.Postgres, cfg PostgresConfig) *Postgres {
	t.Helper()
	cfg.URL = pg.URL()
	s, err := OpenPostgres(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// dbPool returns a pool on pg for checking the table, closed when the test ends.
func dbPool(t *testing.T, pg *processorstest.Postgres) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(context.Background(), pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func queryInt(t *testing.T, db *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestPostgresStoreOnce(t *testing.T) {
	t.Parallel()
	pg := processorstest.StartPostgres(t)
	db := dbPool(t, pg)
	if n := queryInt(t, db, "SELECT count(*) FROM pg_tables WHERE tablename = 'items'"); n != 0 {
		t.Fatalf("items table exists before the sink opens")
	}
	s := openPostgres(t, pg, PostgresConfig{})

	it := product(1, map[string]any{"tags": []any{"a", "b"}, "dirty": "nul\x00 and bad \xff utf-8"})
	it.Meta = map[string]any{"depth": 2}
	mustStore(t, s, it, true)
	mustStore(t, s, product(2, nil), true)
	mustStore(t, s, it, false)
	changed := product(2, map[string]any{"name": "renamed"})
	mustStore(t, s, changed, false) // same key: the first version stays

	if n := queryInt(t, db, "SELECT count(*) FROM items"); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
	var typ, url string
	var at time.Time
	var fields map[string]any
	var meta []byte
	err := db.QueryRow(context.Background(), "SELECT type, url, crawled_at, fields, meta FROM items WHERE key = $1",
		it.Key()).Scan(&typ, &url, &at, &fields, &meta)
	if err != nil {
		t.Fatal(err)
	}
	wantFields := map[string]any{"url": "http://shop/p/1", "name": "p1", "price": 1.0, "tags": []any{"a", "b"},
		"dirty": "nul\uFFFD and bad \uFFFD utf-8"}
	if typ != "product" || url != "http://shop/p/1" || !at.Equal(crawled) || !reflect.DeepEqual(fields, wantFields) ||
		string(meta) != `{"depth": 2}` {
		t.Errorf("row (-want +got):\n-%v %v %v %v %v\n+%v %v %v %v %s", "product", "http://shop/p/1", crawled,
			wantFields, `{"depth": 2}`, typ, url, at, fields, meta)
	}
	if n := queryInt(t, db, "SELECT count(*) FROM items WHERE key = $1 AND meta IS NULL AND fields->>'name' = 'p2'",
		product(2, nil).Key()); n != 1 {
		t.Errorf("item 2: want the first version and a NULL meta")
	}
	st := s.Stats()
	if st.Stored != 2 || st.Duplicates != 2 {
		t.Errorf("stats %+v, want 2 stored, 2 duplicates", st)
	}
}

func TestPostgresConcurrentStoreBatches(t *testing.T) {
	t.Parallel()
	pg := processorstest.StartPostgres(t)
	db := dbPool(t, pg)
	s := openPostgres(t, pg, PostgresConfig{Table: "batched"})
	const goroutines, items = 200, 5000
	var wg sync.WaitGroup
	var stored atomic.Int64
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < items; i += goroutines {
				ok, err := s.Store(context.Background(), product(i, nil))
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					stored.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got := queryInt(t, db, "SELECT count(*) FROM batched"); got != items || stored.Load() != items {
		t.Fatalf("%d rows, %d stored, want %d", got, stored.Load(), items)
	}
	// Every statement is its own transaction, so the rows' xmin tell, on the server's
	// side, how many statements inserted them.
	txs := queryInt(t, db, "SELECT count(DISTINCT xmin::text) FROM batched")
	biggest := queryInt(t, db, "SELECT max(n) FROM (SELECT count(*) AS n FROM batched GROUP BY xmin::text) b")
	st := s.Stats()
	t.Logf("%d items in %d statements (largest %d rows); stats %+v", items, txs, biggest, st)
	if int64(txs) != st.Batches || st.Rows != items {
		t.Errorf("server saw %d insert transactions, sink counted %d batches of %d rows in all", txs, st.Batches, st.Rows)
	}
	if txs > items/20 {
		t.Errorf("%d statements for %d items from %d goroutines: not batched", txs, items, goroutines)
	}
	if biggest > DefaultPostgresBatchSize {
		t.Errorf("a statement inserted %d rows, more than the batch size %d", biggest, DefaultPostgresBatchSize)
	}
}

func TestPostgresTwoSinksOverlappingKeys(t *testing.T) {
	t.Parallel()
	pg := processorstest.StartPostgres(t)
	db := dbPool(t, pg)
	// Two store processes start at once and both create the table.
	sinks := make([]*Postgres, 2)
	var wg sync.WaitGroup
	for i := range sinks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := OpenPostgres(context.Background(), PostgresConfig{URL: pg.URL(), Table: "public.shared"})
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { _ = s.Close(context.Background()) })
			sinks[i] = s
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Both get every key at the same time, in rounds of 100 keys, each key from its own
	// goroutine, so their batches hold the same keys in different orders.
	const items, round = 3000, 100
	var stored, dups atomic.Int64
	for r := 0; r < items; r += round {
		for _, s := range sinks {
			for i := r; i < r+round; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := s.Store(context.Background(), product(i, nil))
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						stored.Add(1)
					} else {
						dups.Add(1)
					}
				}()
			}
		}
		wg.Wait()
	}
	rows := queryInt(t, db, "SELECT count(*) FROM shared")
	distinct := queryInt(t, db, "SELECT count(DISTINCT key) FROM shared")
	if rows != items || distinct != items || stored.Load() != items || dups.Load() != items {
		t.Errorf("rows=%d distinct=%d stored=%d duplicates=%d, want %d each", rows, distinct, stored.Load(), dups.Load(), items)
	}
}

func TestPostgresServerRestart(t *testing.T) {
	t.Parallel()
	pg := processorstest.StartPostgres(t)
	db := dbPool(t, pg)
	s := openPostgres(t, pg, PostgresConfig{})
	mustStore(t, s, product(1, nil), true)

	pg.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := s.Store(ctx, product(2, nil)); err == nil || !strings.HasPrefix(err.Error(), "processors: ") {
		t.Fatalf("store on a dead server: err = %v, want a processors: error", err)
	}
	pg.Restart()
	// The pool may hold more broken connections; the pipeline retries, so do we.
	var err error
	for try := 0; try < 5; try++ {
		if _, err = s.Store(ctx, product(2, nil)); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("store after the server restarted: %v", err)
	}
	mustStore(t, s, product(1, nil), false)
	if n := queryInt(t, db, "SELECT count(*) FROM items"); n != 2 {
		t.Errorf("%d rows, want 2", n)
	}
}

func TestPostgresBadItemFailsAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := processorstest.StartPostgres(t)
	db := dbPool(t, pg)
	s := openPostgres(t, pg, PostgresConfig{Writers: 1})
	if _, err := db.Exec(ctx, "ALTER TABLE items ADD CHECK (url <> 'http://shop/p/13')"); err != nil {
		t.Fatal(err)
	}
	// Hold the only writer on a locked table while the items queue up, so they go in
	// one batch with the bad one.
	lock, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, "LOCK TABLE items IN EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); mustStore(t, s, product(100, nil), true) }()
	for queryInt(t, db, "SELECT count(*) FROM pg_locks WHERE relation = 'items'::regclass AND NOT granted") == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	errs := make([]error, 30)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Store(ctx, product(i, nil))
		}()
	}
	time.Sleep(100 * time.Millisecond) // let them queue
	_ = lock.Rollback(ctx)
	wg.Wait()
	for i, err := range errs {
		if (err != nil) != (i == 13) {
			t.Errorf("item %d: err = %v", i, err)
		}
	}
	if n := queryInt(t, db, "SELECT count(*) FROM items"); n != 30 {
		t.Errorf("%d rows, want 30", n)
	}
	if st := s.Stats(); st.FailedBatches < 2 || st.Rows <= 31 {
		t.Errorf("stats %+v: the bad item's batch was not retried row by row", st)
	}
}

func TestPostgresTable(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"items; DROP TABLE x", "a.b.c", `"quoted"`, "1abc", strings.Repeat("x", 64), "a-b"} {
		_, err := OpenPostgres(context.Background(), PostgresConfig{URL: "postgres://127.0.0.1:1/db", Table: name})
		if err == nil || !strings.Contains(err.Error(), "not an identifier") && !strings.Contains(err.Error(), "schema.name") {
			t.Errorf("table %q: err = %v, want it rejected", name, err)
		}
	}
	pg := processorstest.StartPostgres(t)
	db := dbPool(t, pg)
	if _, err := db.Exec(context.Background(), "CREATE TABLE other (id int)"); err != nil {
		t.Fatal(err)
	}
	_, err := OpenPostgres(context.Background(), PostgresConfig{URL: pg.URL(), Table: "other"})
	if err == nil || !strings.Contains(err.Error(), "cannot take items") {
		t.Errorf("table of another shape: err = %v", err)
	}
	s := openPostgres(t, pg, PostgresConfig{Table: "MixedCase"})
	mustStore(t, s, product(1, nil), true)
	if n := queryInt(t, db, `SELECT count(*) FROM "MixedCase"`); n != 1 {
		t.Errorf("%d rows in \"MixedCase\", want 1", n)
	}
}

func TestPostgresClose(t *testing.T) {
	t.Parallel()
	pg := processorstest.StartPostgres(t)
	db := dbPool(t, pg)
	s := openPostgres(t, pg, PostgresConfig{FlushInterval: time.Second, BatchSize: 1000})
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Store(context.Background(), product(i, nil)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store(context.Background(), product(99, nil)); err == nil {
		t.Error("store after close succeeded")
	}
	if n := queryInt(t, db, "SELECT count(*) FROM items"); n != 10 {
		t.Errorf("%d rows, want 10", n)
	}
}

func TestPostgresUnreachable(t *testing.T) {
	t.Parallel()
	// A closed port: refused at once.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	_ = l.Close()
	start := time.Now()
	_, err := OpenPostgres(context.Background(), PostgresConfig{URL: "postgres://crawler:s3cret-pw@" + addr + "/db"})
	if err == nil {
		t.Fatal("open succeeded")
	}
	want := "processors: cannot reach postgres at " + addr + ": "
	if !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "s3cret-pw") || time.Since(start) > 2*time.Second {
		t.Errorf("error after %v:\n%v\nwant it quick, starting %q and without the password", time.Since(start), err, want)
	}

	// A server that accepts connections and never answers: the caller's deadline holds.
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = OpenPostgres(ctx, PostgresConfig{URL: "postgres://crawler:s3cret-pw@" + l.Addr().String() + "/db"})
	if err == nil || !strings.HasPrefix(err.Error(), "processors: cannot reach postgres at "+l.Addr().String()) ||
		time.Since(start) > 3*time.Second {
		t.Errorf("silent server: after %v: %v", time.Since(start), err)
	}

	// An unknown role: the server answers, so the error says it could not connect.
	pg := processorstest.StartPostgres(t)
	_, err = OpenPostgres(context.Background(), PostgresConfig{URL: "postgres://nobody:s3cret-pw@" + pg.Addr + "/nodb?sslmode=disable"})
	if err == nil || !strings.HasPrefix(err.Error(), "processors: cannot connect to postgres at "+pg.Addr) ||
		strings.Contains(err.Error(), "s3cret-pw") {
		t.Errorf("unknown role: %v", err)
	}
}

func TestJSONForPostgres(t *testing.T) {
	got, err := jsonForPostgres(map[string]any{"a\x00": []any{"x\x00y", 1.5, map[string]any{"n": json.Number("12345678901234567890")}}, "b": "<&>"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a` + "\uFFFD" + `":["x` + "\uFFFD" + `y",1.5,{"n":12345678901234567890}],"b":"\u003c\u0026\u003e"}`
	if got != want {
		t.Errorf("(-want +got):\n-%s\n+%s", want, got)
	}
	if _, err := jsonForPostgres(map[string]any{"f": func() {}}); err == nil {
		t.Error("a func field was encoded")
	}
	if got := textForPostgres("a\x00b\xffc"); got != "a\uFFFDb\uFFFDc" {
		t.Errorf("text: %q", got)
	}
	var e *redactedError
	if err := connectError("h:1", "pw123", fmt.Errorf("x pw123 y")); !errors.As(err, &e) || strings.Contains(err.Error(), "pw123") {
		t.Errorf("connect error shows the password: %v", err)
	}
}
