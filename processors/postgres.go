package processors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// Defaults of PostgresConfig.
const (
	DefaultPostgresTable         = "items"
	DefaultPostgresBatchSize     = 500
	DefaultPostgresFlushInterval = 50 * time.Millisecond
	DefaultPostgresWriteTimeout  = 30 * time.Second
	DefaultPostgresWriters       = 2
)

// PostgresConfig configures a Postgres sink.
type PostgresConfig struct {
	// URL is the server, as postgres://user:password@host:port/db?sslmode=... (any
	// connection string pgx accepts, pool_max_conns included). Required.
	URL string
	// Table is the table the items go to, "name" or "schema.name" (letters, digits and
	// _; case-sensitive, since it is quoted). It is created when missing. Default "items".
	Table string
	// BatchSize is the most items written by one statement. Default 500.
	BatchSize int
	// FlushInterval bounds how long a batch keeps taking in Store calls while they keep
	// coming. A batch goes to a free writer as soon as it is full (BatchSize), or no
	// further call is queued, or FlushInterval has passed since its first item: a lone
	// Store is not delayed, and a steady stream of calls makes batches of up to
	// BatchSize. While every writer is busy the batch keeps growing. Default 50ms.
	FlushInterval time.Duration
	// Writers is how many batches may be written at once, each on its own connection.
	// Default 2.
	Writers int
	// WriteTimeout bounds one batch's statement; the callers in a batch that times out
	// get an error (and the pipeline delivers their items again). Default 30s.
	WriteTimeout time.Duration
	// Logger; nil means no-op.
	Logger *zap.Logger
}

func (c *PostgresConfig) setDefaults() {
	c.Table = cmp.Or(c.Table, DefaultPostgresTable)
	c.BatchSize = cmp.Or(c.BatchSize, DefaultPostgresBatchSize)
	c.FlushInterval = cmp.Or(c.FlushInterval, DefaultPostgresFlushInterval)
	c.Writers = cmp.Or(c.Writers, DefaultPostgresWriters)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, DefaultPostgresWriteTimeout)
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// Validate reports a config that cannot work.
func (c *PostgresConfig) Validate() error {
	switch {
	case c.URL == "":
		return errors.New("processors: postgres sink needs a URL")
	case c.BatchSize < 1:
		return fmt.Errorf("processors: postgres batch size %d must be at least 1", c.BatchSize)
	case c.Writers < 1:
		return fmt.Errorf("processors: postgres writers %d must be at least 1", c.Writers)
	case c.FlushInterval < 0 || c.WriteTimeout < 0:
		return errors.New("processors: postgres flush interval and write timeout must not be negative")
	}
	_, err := parseTable(c.Table)
	return err
}

// Postgres is a sink that inserts items into a PostgreSQL table, one row per item key:
// key (primary key), type, url, crawled_at, fields (jsonb: the item's fields), meta
// (jsonb: the request's meta without the crawler's own keys, spiders.UserMeta; null when
// empty), version (the item's _version; 0 when not versioned), changed (text[]: its
// _changed; null when not versioned) and stored_at. The table is created with a
// comment on each column (postgresColumns). Concurrent Store calls are batched into one INSERT ... ON CONFLICT (key)
// DO UPDATE ... WHERE the stored version is lower statement (group commit): an item
// delivered again is not inserted twice, by this process or any other writing to the
// same table, and Store reports it as not stored; a newer version of a versioned item
// replaces its row (upsert), and an older one delivered late leaves it as it is. When a batch fails, every Store call in it gets
// the error; a batch rejected for one item's data is retried item by item, so only that
// item fails.
type Postgres struct {
	cfg   PostgresConfig
	table string // quoted
	pool  *pgxpool.Pool
	log   *zap.Logger
	ins   string // the batch INSERT statement

	// ctx is the context of statements: it outlives callers, and Close cancels it
	// when its own deadline passes.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.RWMutex // held for reading while a Store enqueues; Close takes it
	closed  bool
	reqs    chan *pgReq
	batches chan []*pgReq
	wg      sync.WaitGroup
	errLog  *loop.Errors // at most one failure line a second

	stats struct{ batches, rows, stored, dups, failed atomic.Int64 }
}

// pgReq is one Store call waiting for its batch.
type pgReq struct {
	key, typ, url string
	crawledAt     time.Time
	fields, meta  string // JSON; meta "" is NULL
	version       int32
	changed       string // JSON array; "" is NULL
	done          chan error
	row           int // its index in the rows sent, while first of its key
	// Set by the writer before done is sent:
	stored bool
	err    error
	dupOf  *pgReq // an earlier call in the same batch with the same key
}

// PostgresStats counts what a Postgres sink did.
type PostgresStats struct {
	// Batches is the number of batch statements sent (one round trip each).
	Batches int64
	// Rows is the number of rows in them.
	Rows int64
	// Stored and Duplicates count Store calls that inserted (or, a newer version,
	// updated) their item's row, and those whose key was already in the table at that
	// version or a newer one (or in the same batch).
	Stored, Duplicates int64
	// FailedBatches counts batch statements that returned an error.
	FailedBatches int64
}

// Stats returns the sink's counters so far.
func (s *Postgres) Stats() PostgresStats {
	return PostgresStats{Batches: s.stats.batches.Load(), Rows: s.stats.rows.Load(),
		Stored: s.stats.stored.Load(), Duplicates: s.stats.dups.Load(),
		FailedBatches: s.stats.failed.Load()}
}

// Table returns the quoted name of the sink's table.
func (s *Postgres) Table() string { return s.table }

// Store inserts it unless a row with its key exists, or updates that row when it holds
// an older version of it. It returns once the row is committed, or when ctx ends (the
// item may then still be inserted).
func (s *Postgres) Store(ctx context.Context, it *spiders.Item) (bool, error) {
	req, err := newPgReq(it)
	if err != nil {
		return false, err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return false, errors.New("processors: postgres sink closed")
	}
	select {
	case s.reqs <- req:
		s.mu.RUnlock()
	case <-ctx.Done():
		s.mu.RUnlock()
		return false, ctx.Err()
	}
	select {
	case err := <-req.done:
		return req.stored, err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func newPgReq(it *spiders.Item) (*pgReq, error) {
	key := it.Key()
	fields, err := jsonForPostgres(it.Fields)
	if err != nil {
		return nil, fmt.Errorf("processors: encode item %q: %w", key, err)
	}
	var meta string
	if m := spiders.UserMeta(it.Meta); len(m) > 0 { // never the crawler's own keys
		if meta, err = jsonForPostgres(m); err != nil {
			return nil, fmt.Errorf("processors: encode meta of item %q: %w", key, err)
		}
	}
	var changed string // NULL: not versioned
	if it.Version > 0 {
		if changed, err = jsonForPostgres(append([]string{}, it.Changed...)); err != nil { // [] for none
			return nil, fmt.Errorf("processors: encode _changed of item %q: %w", key, err)
		}
	}
	return &pgReq{key: key, typ: textForPostgres(it.Type), url: textForPostgres(it.URL),
		crawledAt: it.CrawledAt, fields: fields, meta: meta, version: int32(min(it.Version, math.MaxInt32)), changed: changed,
		done: make(chan error, 1)}, nil
}

// Close writes what is queued and closes the connections. When ctx ends first, the
// statements in flight are cancelled and their callers get an error.
func (s *Postgres) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.reqs) // no Store is sending: they hold s.mu for reading while they do
	s.mu.Unlock()

	drained := make(chan struct{})
	go func() { s.wg.Wait(); close(drained) }()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = fmt.Errorf("processors: close postgres sink: %w", ctx.Err())
		s.cancel()
		<-drained
	}
	s.cancel()
	s.pool.Close()
	st := s.Stats()
	s.log.Info("postgres sink closed", zap.Int64("batches", st.Batches), zap.Int64("stored", st.Stored),
		zap.Int64("duplicates", st.Duplicates), zap.Int64("failed_batches", st.FailedBatches))
	return err
}

var _ Sink = (*Postgres)(nil)
var _ Sink = (*CSV)(nil)
var _ Sink = (*JSONL)(nil)
