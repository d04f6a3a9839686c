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

func IsNoSuchKey(err error) bool {
	return err != nil && (err.Error() == "ERR no such key" || err.Error() == "ERR The XINFO subcommand requires the key to exist.")
}
