package rkit

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrNil reports go-redis's redis.Nil (an empty reply).
func ErrNil(err error) bool { return errors.Is(err, redis.Nil) }

// IsNoScript reports Redis's NOSCRIPT error (its script cache was flushed, e.g. by a
// restart).
func IsNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// IsNoSuchKey reports the error of a command on a key that does not exist.
func IsNoSuchKey(err error) bool {
	return err != nil && (err.Error() == "ERR no such key" || err.Error() == "ERR The XINFO subcommand requires the key to exist.")
}

// RetentionField is the field of the crawl's meta hash that records the retention a
// stream kind ("requests", "responses", "items") is trimmed with, for status.
func RetentionField(kind string) string { return "retention:" + kind }
