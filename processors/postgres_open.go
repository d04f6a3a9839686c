package processors

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
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

// PostgresColumn is a column of the items table a Postgres sink writes.
type PostgresColumn struct {
	// Name and Type are the column's name and its SQL type with its constraints.
	Name, Type string
	// Comment says what the column holds: the table is created with it (COMMENT ON
	// COLUMN), and docs/sinks.md shows it.
	Comment string
	// Added is true for a column later builds added: an items table without it gets it
	// when the sink opens.
	Added bool
}

// PostgresTableComment is the comment the items table is created with.
const PostgresTableComment = "Items scraped by streamcrawl: one row per item key, holding its last version"

// PostgresColumns are the items table's columns, in order. The key is the primary key;
// a row is written once per key, and then updated only by a greater version of its item
// (see Postgres).
var PostgresColumns = []PostgresColumn{
	{Name: "key", Type: "text PRIMARY KEY",
		Comment: `The item key (_key): a JSON array of the item type and its key fields, ["product","http://shop/p/1"]`},
	{Name: "type", Type: "text NOT NULL", Comment: "The item type (_type)"},
	{Name: "url", Type: "text NOT NULL", Comment: "The page the item came from (_url)"},
	{Name: "crawled_at", Type: "timestamptz NOT NULL", Comment: "When that page was fetched (_crawled_at)"},
	{Name: "fields", Type: "jsonb NOT NULL", Comment: "The item's fields, as the spider extracted them"},
	{Name: "meta", Type: "jsonb",
		Comment: "The meta of the request the item came from (_meta), without the crawler's own keys; NULL when empty"},
	{Name: "stored_at", Type: "timestamptz NOT NULL DEFAULT now()", Comment: "When the row was inserted or last updated"},
	{Name: "version", Type: "integer NOT NULL DEFAULT 0", Added: true,
		Comment: "The item's version (_version): 1, then one more each time its fields change; 0 when items are not versioned. Only a greater version updates the row"},
	{Name: "changed", Type: "text[]", Added: true,
		Comment: "The fields that differ from the previous version (_changed), sorted; empty for version 1, NULL when items are not versioned"},
}

// createSQL is the CREATE TABLE statement of the items table; %s is the quoted table
// name.
func createSQL() string {
	cols := make([]string, len(PostgresColumns))
	for i, c := range PostgresColumns {
		cols[i] = fmt.Sprintf("\t%-10s %s", c.Name, c.Type)
	}
	return "CREATE TABLE %s (\n" + strings.Join(cols, ",\n") + "\n)"
}

// columnsSQL lists the columns of table $1 (quoted).
const columnsSQL = `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`

// prepareTable creates the table with its comments if it is missing (under an advisory
// lock, since two store processes may start at once), or gives an items table of an
// earlier build the columns added since (PostgresColumn.Added; a table of another
// shape is left as it is), then sends an empty batch, so a table of another shape fails
// here rather than on the first item.
func (s *Postgres) prepareTable(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "streamcrawl:"+s.table); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", s.table).Scan(&exists); err != nil {
			return err
		}
		stmts := []string{}
		if !exists {
			stmts = append(stmts, fmt.Sprintf(createSQL(), s.table),
				fmt.Sprintf("COMMENT ON TABLE %s IS %s", s.table, sqlLiteral(PostgresTableComment)))
			for _, c := range PostgresColumns {
				stmts = append(stmts, s.commentSQL(c))
			}
		} else {
			// ALTER TABLE locks the table even when the column exists: only when it is missing.
			rows, err := tx.Query(ctx, columnsSQL, s.table)
			if err != nil {
				return err
			}
			has, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			for _, c := range PostgresColumns {
				if c.Added && slices.Contains(has, "fields") && !slices.Contains(has, c.Name) {
					stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s ADD COLUMN IF NOT EXISTS %s %s", s.table, c.Name, c.Type), s.commentSQL(c))
				}
			}
		}
		for _, q := range stmts {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("processors: create postgres table %s: %w", s.table, err)
	}
	if err := s.insert(ctx, nil); err != nil {
		return fmt.Errorf("processors: postgres table %s cannot take items (a table of another shape?): %w", s.table, err)
	}
	return nil
}

// commentSQL is the COMMENT ON COLUMN statement of column c.
func (s *Postgres) commentSQL(c PostgresColumn) string {
	return fmt.Sprintf("COMMENT ON COLUMN %s.%s IS %s", s.table, pgx.Identifier{c.Name}.Sanitize(), sqlLiteral(c.Comment))
}

// sqlLiteral quotes s as an SQL string literal (standard_conforming_strings, on since
// PostgreSQL 9.1): COMMENT takes no parameters.
func sqlLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
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
