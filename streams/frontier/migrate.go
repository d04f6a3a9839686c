package frontier

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"

	"github.com/redis/go-redis/v9"
)

// Migrate brings the frontier of a crawl written by an older version to today's form,
// in every partition, and returns how many waiting requests it moved:
//
//   - per-host state from the partition's one hash of "<host>:<x>" fields
//     (streams.Keys.LegacyHosts) into each host's state hash and the back-off hash;
//   - waiting requests from the host queues of IDs (a ZSET per host, payloads in
//     streams.Keys.LegacyWaiting) into the compact band lists;
//   - waiting requests from the one ZSET of requests of crawls started before host
//     queues (streams.Keys.LegacyFrontier) into their hosts' queues.
//
// Every step is one script per batch of at most 500, so two processes migrating at once
// neither lose nor double a request; a request it cannot read goes to the partition's
// dead letters. cfg gives the crawl (Client, streams.Layout), its order, host defaults
// and rules; hostOf returns the host key of an encoded request. A no-op (a few EXISTS)
// once done. Every process of the crawl must run this version or later: an older one
// would not see the moved requests.
func Migrate(ctx context.Context, cfg Config, hostOf func(payload []byte) (string, error)) (int, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return 0, err
	}
	m := migration{rdb: cfg.Client, order: order(cfg.Order), cfg: cfg,
		defaults: hostDefaults{HostRule: cfg.Hosts, leaseTTL: cfg.LeaseTTL, quantum: cfg.Quantum}}
	total := 0
	for part, k := range cfg.Layout.Parts {
		m.part, m.k = part, k
		if err := m.hosts(ctx); err != nil {
			return total, err
		}
		n, err := m.queues(ctx)
		total += n
		if err != nil {
			return total, err
		}
		n, err = m.legacy(ctx, hostOf)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// migration is one Migrate run.
type migration struct {
	rdb      redis.UniversalClient
	cfg      Config
	order    order
	defaults hostDefaults
	part     int
	k        streams.Keys
}

// args returns the prologue arguments of a migration script, then own.
func (m *migration) args(own ...any) []any {
	return schedArgs(m.defaults, partIDPrefix(m.part), 0, false, m.order.sign(), own...)
}

// rule returns host's rule as the scripts take it.
func (m *migration) rule(host string) string {
	if m.cfg.Rules != nil {
		if r := m.cfg.Rules(host); r != nil {
			return r.arg()
		}
	}
	return ""
}

// migrateHostsScript moves fields of the legacy per-host hash into the hosts' state
// hashes (in flight, rule, Crawl-delay, AutoThrottle) and the back-off hash, each field
// only while it is still there.
//
// KEYS[1..9], ARGV[1..10] -> schedKeys, schedArgs (see hostSchedLua)
// KEYS[10] -> sc:{c}:hosts (legacy)
// ARGV[11...] -> per field: its name ("<host>:<x>"), the host, x
// Output: number of fields moved
var migrateHostsScript = schedScript("", `
local moved = 0
for i = 11, #ARGV, 3 do
  local v = redis.call('HGET', KEYS[10], ARGV[i])
  if v then
    redis.call('HDEL', KEYS[10], ARGV[i])
    local host, x = ARGV[i + 1], ARGV[i + 2]
    if x == 'b' then
      redis.call('HSET', S.backoff, host, v)
    elseif x == 'f' or x == 'r' or x == 'c' or x == 'a' then
      redis.call('HSET', S.hp .. host, x, v)
    end
    moved = moved + 1
  end
end
return moved
`)

// hosts moves the legacy per-host hash of the partition, 500 fields at a time.
func (m *migration) hosts(ctx context.Context) error {
	key := m.k.LegacyHosts
	for {
		fields, _, err := m.rdb.HScan(ctx, key, 0, "", 500).Result()
		if err != nil {
			return fmt.Errorf("frontier: migrate host state: %w", err)
		}
		if len(fields) == 0 {
			return nil
		}
		args := m.args()
		for i := 0; i+1 < len(fields); i += 2 {
			f := fields[i]
			j := strings.LastIndexByte(f, ':')
			if j < 0 {
				args = append(args, f, "", "")
				continue
			}
			args = append(args, f, f[:j], f[j+1:])
		}
		if err := migrateHostsScript.Run(ctx, m.rdb, schedKeys(m.k, key), args...).Err(); err != nil {
			return fmt.Errorf("frontier: migrate host state: %w", err)
		}
	}
}

// migrateQueueScript moves requests of one host's legacy queue (IDs in a ZSET, payloads
// in the legacy waiting hash) into its band lists, each only while its ID is still in
// the queue, and wakes the host.
//
// KEYS[1..9], ARGV[1..10] -> schedKeys, schedArgs (see hostSchedLua)
// KEYS[10] -> sc:{c}:hq:<host> (legacy), KEYS[11] -> sc:{c}:waiting (legacy)
// ARGV[11] -> host, ARGV[12] -> its rule; then per request: ID, band
// Output: number of requests moved
var migrateQueueScript = schedScript("", `
local host = ARGV[11]
local st = state(host)
activate(host, st, ARGV[12])
local before = best_band(st)
local moved, best = 0, nil
for i = 13, #ARGV, 2 do
  local id, band = ARGV[i], tonumber(ARGV[i + 1])
  if redis.call('ZREM', KEYS[10], id) == 1 then
    local p = redis.call('HGET', KEYS[11], id)
    redis.call('HDEL', KEYS[11], id)
    if p then
      enqueue(host, st, band, {whole(p)})
      moved = moved + 1
      if best == nil or band < best then best = band end
    end
  end
end
if best ~= nil then
  if redis.call('ZSCORE', S.ready, host) then
    if before == nil or best < before then
      local cur = tonumber(redis.call('ZSCORE', S.ready, host))
      zadd(S.ready, best * 1e9 + cur % 1e9, host)
    end
  else
    wake(host, st, best, before)
  end
end
commit()
return moved
`)

// queues moves the legacy host queues of the partition (found by SCAN: they exist only
// while the legacy waiting hash does).
func (m *migration) queues(ctx context.Context) (int, error) {
	if n, err := m.rdb.Exists(ctx, m.k.LegacyWaiting).Result(); err != nil || n == 0 {
		if err != nil {
			return 0, fmt.Errorf("frontier: migrate host queues: %w", err)
		}
		return 0, nil
	}
	var hosts []string
	err := rkit.ScanKeys(ctx, m.rdb, globEscape(m.k.HostQueues)+"*", func(keys []string) error {
		types := make([]*redis.StatusCmd, len(keys))
		_, _ = m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error { // errors are read per command
			for i, key := range keys {
				types[i] = p.Type(ctx, key)
			}
			return nil
		})
		for i, key := range keys {
			if types[i].Val() == "zset" { // the band lists are lists
				hosts = append(hosts, strings.TrimPrefix(key, m.k.HostQueues))
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("frontier: migrate host queues: %w", err)
	}
	total := 0
	for _, host := range hosts {
		key := m.k.LegacyHostQueue(host)
		for {
			zs, err := m.rdb.ZRangeWithScores(ctx, key, 0, 499).Result()
			if err != nil {
				return total, fmt.Errorf("frontier: migrate host queue of %s: %w", host, err)
			}
			if len(zs) == 0 {
				break
			}
			args := m.args(host, m.rule(host))
			for _, z := range zs {
				id, _ := z.Member.(string)
				args = append(args, id, m.legacyBand(z.Score))
			}
			n, err := migrateQueueScript.Run(ctx, m.rdb, schedKeys(m.k, key, m.k.LegacyWaiting), args...).Int()
			if err != nil {
				return total, fmt.Errorf("frontier: migrate host queue of %s: %w", host, err)
			}
			total += n
		}
	}
	// Payloads whose IDs were in no queue any more (a crash between two steps of an old
	// version): nothing refers to them.
	if err := m.rdb.Del(ctx, m.k.LegacyWaiting).Err(); err != nil {
		return total, fmt.Errorf("frontier: migrate host queues: %w", err)
	}
	return total, nil
}

// legacyBand returns the band of a legacy score: band × 1e9 plus (FIFO) or minus (LIFO)
// less than 1e9.
func (m *migration) legacyBand(score float64) int64 {
	if m.order.sign() < 0 {
		return int64(math.Ceil(score / 1e9))
	}
	return int64(math.Floor(score / 1e9))
}

// migrateScript moves requests of the legacy frontier into their hosts' queues: each
// member still in the legacy ZSET goes to its host's queue with its band and is removed
// there, in one step, so two processes migrating at once neither lose nor double one.
//
// KEYS[1..9], ARGV[1..10] -> schedKeys, schedArgs (see hostSchedLua)
// KEYS[10] -> sc:{c}:frontier (legacy)
// ARGV[11...] -> per request: member, host, band, the host's rule
// Output: number moved
var migrateScript = schedScript("", `
local moved = 0
for i = 11, #ARGV, 4 do
  local m, host, band = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  if redis.call('ZREM', KEYS[10], m) == 1 then
    local st = state(host)
    activate(host, st, ARGV[i + 3])
    local before = best_band(st)
    enqueue(host, st, band, {whole(m)})
    wake(host, st, band, before)
    moved = moved + 1
  end
end
commit()
return moved
`)

// legacy moves the requests waiting in the partition's legacy frontier ZSET (a crawl
// started by a version before host queues) into their hosts' queues, in chunks.
func (m *migration) legacy(ctx context.Context, hostOf func(payload []byte) (string, error)) (int, error) {
	total := 0
	for {
		zs, err := m.rdb.ZRangeWithScores(ctx, m.k.LegacyFrontier, 0, 499).Result()
		if err != nil {
			return total, fmt.Errorf("frontier: migrate frontier: %w", err)
		}
		if len(zs) == 0 {
			return total, nil
		}
		args := m.args()
		for _, z := range zs {
			member, _ := z.Member.(string)
			host, err := hostOf([]byte(member))
			if err != nil {
				if err := deadLegacy(ctx, m.rdb, m.k, member, err); err != nil {
					return total, err
				}
				continue
			}
			args = append(args, member, host, m.legacyBand(z.Score), m.rule(host))
		}
		n, err := migrateScript.Run(ctx, m.rdb, schedKeys(m.k, m.k.LegacyFrontier), args...).Int()
		if err != nil {
			return total, fmt.Errorf("frontier: migrate frontier: %w", err)
		}
		total += n
	}
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

// globEscape escapes the characters SCAN MATCH treats as special.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
