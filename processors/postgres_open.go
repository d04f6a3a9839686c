package processors

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// defaultConnectTimeout applies when the URL sets no connect_timeout.
const defaultConnectTimeout = 10 * time.Second

// OpenPostgres connects to the server, creates the table when it is missing, checks that
// it can take items, and starts the batch writers. An unreachable server is an error
// naming its host:port (never the password).
func OpenPostgres(ctx context.Context, cfg PostgresConfig) (*Postgres, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ident, _ := parseTable(cfg.Table)
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil { // pgx redacts the password in its parse errors
		return nil, fmt.Errorf("processors: postgres url: %w", err)
	}
	cc := pcfg.ConnConfig
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = defaultConnectTimeout
	}
	if pcfg.MaxConns < int32(cfg.Writers) {
		pcfg.MaxConns = int32(cfg.Writers)
	}
	addr := net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, connectError(addr, cc.Password, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, connectError(addr, cc.Password, err)
	}
	s := &Postgres{cfg: cfg, table: ident.Sanitize(), pool: pool,
		log: cfg.Logger.With(zap.String("sink", "postgres"), zap.String("addr", addr),
			zap.String("database", cc.Database), zap.String("table", cfg.Table)),
		reqs: make(chan *pgReq, cfg.BatchSize), batches: make(chan []*pgReq)}
	s.errLog = loop.NewErrors(s.log, time.Second)
	s.ins = fmt.Sprintf(insertSQL, s.table)
	if err := s.prepareTable(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.wg.Add(1 + cfg.Writers)
	go s.collect()
	for range cfg.Writers {
		go s.write()
	}
	s.log.Info("postgres sink open", zap.Int("batch_size", cfg.BatchSize),
		zap.Duration("flush_interval", cfg.FlushInterval), zap.Int("writers", cfg.Writers))
	return s, nil
}

// createSQL creates the items table; %s is the quoted table name.
const createSQL = `CREATE TABLE IF NOT EXISTS %s (
	key        text PRIMARY KEY,
	type       text NOT NULL,
	url        text NOT NULL,
	crawled_at timestamptz NOT NULL,
	fields     jsonb NOT NULL,
	meta       jsonb,
	stored_at  timestamptz NOT NULL DEFAULT now(),
	version    integer NOT NULL DEFAULT 0
)`

// addVersionSQL gives a table created before item versions its version column (every
// row version 0, as unversioned items are).
const addVersionSQL = `ALTER TABLE %s ADD COLUMN IF NOT EXISTS version integer NOT NULL DEFAULT 0`

// hasVersionSQL tells whether table $1 (quoted) is an items table (it has the fields
// column; a table of another shape is left as it is) and whether it has its version
// column.
const hasVersionSQL = `SELECT coalesce(bool_or(attname = 'fields'), false), coalesce(bool_or(attname = 'version'), false)
FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`

// prepareTable creates the table if it is missing (under an advisory lock, since two
// store processes may start at once and CREATE TABLE IF NOT EXISTS races with itself),
// then sends an empty batch, so a table of another shape fails here rather than on the
// first item.
func (s *Postgres) prepareTable(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "streamcrawl:"+s.table); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(createSQL, s.table)); err != nil {
			return err
		}
		// ALTER TABLE locks the table even when the column exists: only when it is missing.
		var ours, has bool
		err := tx.QueryRow(ctx, hasVersionSQL, s.table).Scan(&ours, &has)
		if err == nil && ours && !has {
			_, err = tx.Exec(ctx, fmt.Sprintf(addVersionSQL, s.table))
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("processors: create postgres table %s: %w", s.table, err)
	}
	if err := s.insert(ctx, nil); err != nil {
		return fmt.Errorf("processors: postgres table %s cannot take items (a table of another shape?): %w", s.table, err)
	}
	return nil
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// parseTable splits "name" or "schema.name" and checks each part is a plain identifier.
func parseTable(table string) (pgx.Identifier, error) {
	parts := strings.Split(table, ".")
	if len(parts) > 2 {
		return nil, fmt.Errorf("processors: postgres table %q: want name or schema.name", table)
	}
	for _, p := range parts {
		if !identRE.MatchString(p) {
			return nil, fmt.Errorf("processors: postgres table %q: %q is not an identifier (letters, digits, _; at most 63)", table, p)
		}
	}
	return pgx.Identifier(parts), nil
}

// connectError says the server at addr could not be reached (network) or refused the
// connection (it answered with an error), without the password.
func connectError(addr, password string, err error) error {
	verb := "reach"
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		verb = "connect to"
	}
	return &redactedError{err: fmt.Errorf("processors: cannot %s postgres at %s: %w", verb, addr, err), secret: password}
}

// redactedError hides secret in the text of err. pgx does not print passwords; this
// makes sure no wrapped error does either.
type redactedError struct {
	err    error
	secret string
}

func (e *redactedError) Error() string {
	msg := e.err.Error()
	if len(e.secret) >= 3 {
		msg = strings.ReplaceAll(msg, e.secret, "xxxxx")
	}
	return msg
}

func (e *redactedError) Unwrap() error { return e.err }
