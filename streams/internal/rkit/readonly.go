package rkit

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// roOf holds, per client, whether its server runs reading scripts read-only (see
// probeRO): true or false once known.
var roOf sync.Map // redis.Scripter -> bool

// RunRO runs s, a script that only reads, as EVALSHA_RO (EVAL_RO when the server has
// not cached it). A read-only ACL user may run those, where EVALSHA and EVAL are refused,
// and a replica serves them. On a server that cannot (probeRO) it runs s as Run does.
// What the server can do is asked once per client, on its first call, not per call.
// Redis refuses any write from a script run read-only, so s must not write.
func RunRO(ctx context.Context, rdb redis.Scripter, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	ro, known := roOf.Load(rdb)
	if !known {
		ok, err := probeRO(ctx, rdb)
		if err != nil {
			// Not known (Redis unreachable, or the user may not run PING): try it.
			return s.RunRO(ctx, rdb, keys, args...)
		}
		roOf.Store(rdb, ok)
		ro = ok
	}
	if ro.(bool) {
		return s.RunRO(ctx, rdb, keys, args...)
	}
	return s.Run(ctx, rdb, keys, args...)
}

// probeScript calls a command that is no write but that miniredis does not count
// among its reads.
const probeScript = `return redis.call('PING')`

// probeRO tells whether rdb's server runs reading scripts read-only. It cannot when it
// does not have EVAL_RO ("ERR unknown command 'eval_ro', with args beginning with: ...":
// Redis before 7, or a server that renamed it away), or when it is miniredis (the
// embedded Redis), which counts only some reading commands as reads in a read-only
// script (not XINFO, XRANGE, TIME or PING): it refuses the others with "Write commands
// are not allowed in read-only scripts", or, under redis.pcall, returns that error as
// a value that the scripts here take for a missing key, a silent wrong answer.
func probeRO(ctx context.Context, rdb redis.Scripter) (bool, error) {
	err := rdb.EvalRO(ctx, probeScript, nil).Err()
	switch {
	case err == nil:
		return true, nil
	case strings.Contains(strings.ToLower(err.Error()), "unknown command"),
		strings.Contains(err.Error(), "not allowed in read-only scripts"):
		return false, nil
	}
	return false, err
}
