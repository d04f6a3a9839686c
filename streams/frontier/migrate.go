package frontier

import (
	"context"
	"fmt"
	"math"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"

	"github.com/redis/go-redis/v9"
)

// migrateScript moves requests of the legacy frontier into their hosts' queues: each
// member still in the legacy ZSET goes to its host's queue with its band and is removed
// there, in one step, so two processes migrating at once neither lose nor double one.
//
// KEYS[1..8], ARGV[1..8] -> schedKeys, schedArgs (see hostSchedLua)
// KEYS[9] -> sc:{c}:frontier (legacy)
// ARGV[9] -> 1 or -1 (order sign); then per request: member, host, band
// Output: number moved
var migrateScript = schedScript("", `
local sign, n = tonumber(ARGV[9]), (#ARGV - 9) / 3
local seq = redis.call('INCRBY', S.seq, n) - n
local moved = 0
for k = 1, n do
  local i = 10 + 3 * (k - 1)
  local m, host, band = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  if redis.call('ZREM', KEYS[9], m) == 1 then
    enqueue(host, queue_score(band, seq + k, sign), seq + k, m)
    wake(host, band)
    moved = moved + 1
  end
end
return moved
`)

// Migrate moves the requests waiting in the legacy frontier ZSET of every partition (a
// crawl started by a version before host queues) into their hosts' queues, in chunks,
// and returns how many it moved. cfg gives the crawl (Client, streams.Layout) and its order and
// host defaults; hostOf returns the host key of an encoded request, and a request it
// cannot read goes to the partition's dead letters. Safe to run from several processes
// at once, and a no-op (one ZRANGE per partition) once done.
func Migrate(ctx context.Context, cfg Config, hostOf func(payload []byte) (string, error)) (int, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return 0, err
	}
	rdb, l, order := cfg.Client, cfg.Layout, order(cfg.Order)
	defaults := hostDefaults{HostRule: cfg.Hosts, leaseTTL: cfg.LeaseTTL, quantum: cfg.Quantum}
	total := 0
	for part, k := range l.Parts {
		for {
			zs, err := rdb.ZRangeWithScores(ctx, k.LegacyFrontier, 0, 499).Result()
			if err != nil {
				return total, fmt.Errorf("frontier: migrate frontier: %w", err)
			}
			if len(zs) == 0 {
				break
			}
			args := schedArgs(defaults, partIDPrefix(part), 0, false, order.sign())
			for _, z := range zs {
				m, _ := z.Member.(string)
				host, err := hostOf([]byte(m))
				if err != nil {
					if err := deadLegacy(ctx, rdb, k, m, err); err != nil {
						return total, err
					}
					continue
				}
				// A legacy score is band × 1e9 plus (FIFO) or minus (LIFO) less than 1e9.
				band := math.Floor(z.Score / 1e9)
				if order.sign() < 0 {
					band = math.Ceil(z.Score / 1e9)
				}
				args = append(args, m, host, int64(band))
			}
			n, err := migrateScript.Run(ctx, rdb, schedKeys(k, k.LegacyFrontier), args...).Int()
			if err != nil {
				return total, fmt.Errorf("frontier: migrate frontier: %w", err)
			}
			total += n
		}
	}
	return total, nil
}

// deadLegacy moves an unreadable legacy frontier member to the partition's dead
// letters, with cause, and out of the legacy frontier, in one transaction.
func deadLegacy(ctx context.Context, rdb redis.UniversalClient, k streams.Keys, member string, cause error) error {
	_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		d := rkit.Dead{Stream: k.LegacyFrontier, Stage: "frontier", Error: "frontier: legacy frontier entry: " + cause.Error()}
		p.XAdd(ctx, &redis.XAddArgs{Stream: k.Dead, Values: d.Values("_watermill_message_uuid", nextMessageID(), "metadata", "", "payload", member)})
		p.ZRem(ctx, k.LegacyFrontier, member)
		return nil
	})
	if err != nil {
		return fmt.Errorf("frontier: migrate frontier: %w", err)
	}
	return nil
}
