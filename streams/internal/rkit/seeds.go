package rkit

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The start-URL key of a crawl (streams.Keys.Seeds) holds the seeds pushed at runtime;
// the frontier takes them and status reads how many wait. Both judge its type here.

// ErrSeedKeyType is matched (errors.Is) by a SeedKeyError.
var ErrSeedKeyType = errors.New("frontier: start url key has the wrong type")

// SeedKeyError is a start-URL key holding something seeds cannot be taken from (a hash,
// a string, a stream): the crawl stops with it instead of waiting for seeds forever.
type SeedKeyError struct {
	Key  string // <crawl>:start_urls
	Type string // what TYPE answers
}

// Error says which key holds what, and what to do.
func (e *SeedKeyError) Error() string {
	return fmt.Sprintf("frontier: %s is a %s; start urls must be a list (LPUSH), a set (SADD) or a sorted set (ZADD): delete it or push the urls with one of those", e.Key, e.Type)
}

// Is makes errors.Is(err, ErrSeedKeyType) true.
func (e *SeedKeyError) Is(target error) bool { return target == ErrSeedKeyType }

// seedKeyTypes are the key types seeds are taken from ("none": no seeds waiting).
var seedKeyTypes = map[string]bool{"none": true, "list": true, "set": true, "zset": true}

// CheckSeedType returns a *SeedKeyError when a key of type t cannot hold seeds.
func CheckSeedType(key, t string) error {
	if !seedKeyTypes[t] {
		return &SeedKeyError{Key: key, Type: t}
	}
	return nil
}

// ReadSeeds counts the runtime seed keys (seeds, processing) that exist and, when meta
// is set, reads whether meta records the crawl as seeded, in one pipeline. One EXISTS
// per key: in a cluster, EXISTS of several keys needs them in one slot (the seed keys
// share one, but a proxy may not know). A seed key of the wrong type is a
// *SeedKeyError, returned with the rest.
func ReadSeeds(ctx context.Context, rdb redis.UniversalClient, seeds, processing, meta string) (waiting int64, seeded bool, err error) {
	var seedType *redis.StatusCmd
	var proc *redis.IntCmd
	var seededCmd *redis.BoolCmd
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		seedType = p.Type(ctx, seeds)
		proc = p.Exists(ctx, processing)
		if meta != "" {
			seededCmd = p.HExists(ctx, meta, "seeded_at")
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("frontier: read seeds: %w", err)
	}
	waiting, seeded = proc.Val(), seededCmd != nil && seededCmd.Val()
	t := seedType.Val()
	if err := CheckSeedType(seeds, t); err != nil {
		return waiting, seeded, err
	}
	if t != "none" {
		waiting++
	}
	return waiting, seeded, nil
}
