package processors

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// Open opens the sink that out names:
//
//   - a postgres:// or postgresql:// URL: a Postgres sink (OpenPostgres) with default
//     settings; the query parameter table=name (or schema.name) picks the table, default
//     "items", and is removed before connecting;
//   - a path ending in .csv (any case): a CSV sink (OpenCSV) with the header chosen from
//     the first item;
//   - "stream": no sink; items stay in the crawl's items stream (kept for the items
//     retention) for post-processors and other Watermill consumers;
//   - any other path: a JSONL sink (OpenJSONL).
//
// log is given to the sinks that log; nil means no-op.
func Open(ctx context.Context, out string, log *zap.Logger) (Sink, error) {
	if log == nil {
		log = zap.NewNop()
	}
	lower := strings.ToLower(out)
	switch {
	case out == "":
		return nil, errors.New("processors: no output given (a file path or a postgres:// URL)")
	case strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://"):
		cfg, err := postgresConfigFromURL(out)
		if err != nil {
			return nil, err
		}
		cfg.Logger = log
		return OpenPostgres(ctx, cfg)
	case out == StreamOnly:
		log.Info("items stay in the items stream only")
		return streamOnly{}, nil
	case strings.HasSuffix(lower, ".csv"):
		s, err := OpenCSV(out, nil)
		if err != nil {
			return nil, err
		}
		log.Info("csv sink open", zap.String("path", out))
		return s, nil
	default:
		s, err := OpenJSONL(out)
		if err != nil {
			return nil, err
		}
		log.Info("jsonl sink open", zap.String("path", out))
		return s, nil
	}
}

// postgresConfigFromURL takes the table parameter out of a postgres URL.
func postgresConfigFromURL(raw string) (PostgresConfig, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error prints the whole URL, password included: keep only the reason.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return PostgresConfig{}, fmt.Errorf("processors: malformed postgres url: %w", err)
	}
	q := u.Query()
	table := q.Get("table")
	q.Del("table")
	u.RawQuery = q.Encode()
	return PostgresConfig{URL: u.String(), Table: table}, nil
}

// StreamOnly is the out that keeps items in the items stream only (see Open).
const StreamOnly = "stream"

// streamOnly is the sink of StreamOnly: it stores nothing, so the store group acks each
// item and the items stay in the stream for other consumers.
type streamOnly struct{}

func (streamOnly) Store(context.Context, *spiders.Item) (bool, error) { return true, nil }
func (streamOnly) Close(context.Context) error                        { return nil }

// RedactedOut is out, what Open takes, with the password of a postgres:// URL replaced by
// "***", for messages and logs; a file path or a URL without a password is as it is.
func RedactedOut(out string) string {
	if u, err := url.Parse(out); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "***")
			return u.String()
		}
	}
	return out
}
