package dedup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams"
)

// Mode is how a crawl remembers the request fingerprints it has queued.
type Mode string

const (
	// Exact keeps every fingerprint, bucketed into small hashes that Redis stores
	// in its compact listpack encoding (about 22 bytes per URL). Never drops a new URL.
	Exact Mode = "exact"
	// Bloom keeps a scalable Bloom filter (about 1.3 bytes per URL at 1%). A false
	// positive drops a URL that was never crawled: see Config.ErrorRate.
	Bloom Mode = "bloom"
	// Set is one Redis set of fingerprints (SADD), as streamcrawl did before the
	// other modes (64 to 75 bytes per URL). A crawl whose seen set predates the dedup
	// setting keeps using it.
	Set Mode = "set"
)

// Dedup defaults.
const (
	defaultMode      = Exact
	defaultCapacity  = 10_000_000
	DefaultErrorRate = 0.01
)

// parseMode parses a mode name, in any case ("" is the default, exact).
func parseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return defaultMode, nil
	case Exact, Bloom, Set:
		return m, nil
	default:
		return "", fmt.Errorf("dedup: unknown dedup mode %q: want exact, bloom or set", s)
	}
}

// Config says how a crawl deduplicates requests. It is fixed for the crawl's life:
// the first process to open the crawl's dedup stores it in the crawl's meta hash and
// every later process uses the stored one (see Open).
type Config struct {
	// Mode is exact, bloom or set (in any case). Default exact.
	Mode Mode `json:"mode"`
	// Capacity is how many distinct URLs the crawl is planned for. Exact mode sizes its
	// buckets for it (at 5 to 8 times it they outgrow Redis's compact encoding: still
	// exact, at the plain set's 74 bytes per URL; at a tenth of it the per-bucket cost
	// raises 22 bytes per URL to 32); bloom mode sizes its first filter for it (about
	// 1.3 bytes per planned URL, allocated up front) and adds filters, each twice as big,
	// when one is full. Default 10,000,000.
	Capacity int64 `json:"capacity,omitempty"`
	// ErrorRate is the bloom mode's false-positive rate: the share of never-seen URLs it
	// takes for seen and drops. It holds however far the crawl outgrows Capacity. Default
	// 0.01. Unused by the other modes.
	ErrorRate float64 `json:"error_rate,omitempty"`
	// ExpireAfter lets a URL be new again once it was first recorded this long ago:
	// between ExpireAfter and ExpireAfter*5/4 later (see Expiry in
	// expire.go). 0: a URL is seen for the crawl's life. At least a minute; exact and
	// bloom modes only.
	ExpireAfter time.Duration `json:"expire_after,omitempty"`
	// ClockShift moves the expiry clock (the Redis clock) ahead, for tests that
	// simulate weeks without waiting them. Not stored; production leaves it 0.
	ClockShift time.Duration `json:"-"`
}

func (c *Config) setDefaults() {
	if m, err := parseMode(string(c.Mode)); err == nil {
		c.Mode = m // any case, "" for the default
	}
	if c.Capacity == 0 {
		c.Capacity = defaultCapacity
	}
	if c.ErrorRate == 0 && c.Mode == Bloom {
		c.ErrorRate = DefaultErrorRate
	}
	if c.Mode != Bloom {
		c.ErrorRate = 0
	}
}

// validate reports a config that cannot work; zero fields are defaults.
func (c Config) validate() error {
	c.setDefaults()
	if _, err := parseMode(string(c.Mode)); err != nil {
		return err
	}
	if c.Capacity < 1 || c.Capacity > 1<<40 {
		return fmt.Errorf("dedup: dedup capacity %d out of range [1, 2^40]", c.Capacity)
	}
	if c.Mode == Bloom && !(c.ErrorRate >= 1e-9 && c.ErrorRate <= 0.5) {
		return fmt.Errorf("dedup: dedup error rate %g out of range [1e-9, 0.5]", c.ErrorRate)
	}
	switch {
	case c.ExpireAfter < 0 || c.ExpireAfter > 0 && c.ExpireAfter < minExpireAfter:
		return fmt.Errorf("dedup: dedup expire_after %v: want 0 (never) or at least %v", c.ExpireAfter, minExpireAfter)
	case c.ExpireAfter > 0 && c.Mode == Set:
		return errors.New("dedup: dedup expire_after needs the exact or bloom mode, not set")
	}
	return nil
}

// record is a crawl's dedup setup as stored in the meta hash field "dedup": the
// config plus what was derived from the server when it was first stored.
type record struct {
	V int `json:"v"`
	Config
	// BucketBits: exact mode keeps fingerprints in 2^BucketBits hashes.
	BucketBits int `json:"bucket_bits,omitempty"`
	// Native: bloom mode uses the server's BF.* commands (RedisBloom, Redis 8).
	Native bool `json:"native,omitempty"`
}

// version changes when a stored record would be read differently (bucket or
// filter layout); a crawl stored by another version is refused.
const version = 1

// luaSeenAdd returns the seen functions of the record's Lua snippet: see Deduper.Lua.
func (r record) luaSeenAdd() string {
	if r.ExpireAfter > 0 {
		g := r
		g.ExpireAfter = 0
		if g.Mode == Bloom { // see Expiry: each generation's share of the URLs and the error rate
			g.Capacity = max(1, g.Capacity/expireGenerations)
			g.ErrorRate /= expireGenerations + 1
		}
		return g.luaSeenAdd() + luaExpire(r.expirePeriod(), r.ClockShift)
	}
	switch {
	case r.Mode == Exact:
		return luaExact(r.BucketBits) + luaEach + luaExactArg
	case r.Mode == Bloom && r.Native:
		return luaBloomNative + luaEach + luaPlainArg
	case r.Mode == Bloom:
		return luaBloom(bloomLevels(r.Capacity, r.ErrorRate)) + luaPlainArg
	default:
		return luaSet + luaEach + luaPlainArg
	}
}

// scriptArg returns fingerprint fp as seen_add_arg takes it (see luaExactArg).
func (r record) scriptArg(fp []byte) string {
	if r.Mode == Exact && r.ExpireAfter == 0 {
		return exactArg(fp, r.BucketBits)
	}
	return string(fp)
}

// luaItemKeys returns the item-key functions of the record's Lua snippet: see
// Deduper.Lua.
func (r record) luaItemKeys() string {
	if r.Mode == Exact {
		return luaItemBuckets
	}
	return LuaItemSet
}

// luaPlainArg is seen_add_arg of the modes that take the fingerprint as it is.
const luaPlainArg = `
local function seen_add_arg(base, fp) return seen_add(base, fp) end
`

// luaEach defines the batch functions for modes where a batch costs what its
// fingerprints cost one by one.
//
// They call the mode's seen_add and seen_has as defined before them, even where a
// later snippet replaces those (expiry generations, expire.go).
const luaEach = `
local sd_each_add, sd_each_has = seen_add, seen_has
local function seen_add_all(base, fps)
  local out = {}
  for j = 1, #fps do out[j] = sd_each_add(base, fps[j]) end
  return out
end
local function seen_has_all(base, fps)
  local out = {}
  for j = 1, #fps do out[j] = sd_each_has(base, fps[j]) end
  return out
end
`

// luaSet is the set mode: one SADD per fingerprint into the seen set itself.
const luaSet = `
local function seen_add(base, fp) return redis.call('SADD', base, fp) end
local function seen_has(base, fp) return redis.call('SISMEMBER', base, fp) end
`

// Deduper is one crawl's request dedup: Add records fingerprints and says which were
// new, and Lua gives the same logic as Lua source to splice into scripts that also
// enqueue. It holds no state besides the crawl's stored config; it is safe for
// concurrent use and across processes, every change being one Lua script.
type Deduper struct {
	rdb    redis.UniversalClient
	layout streams.Layout
	keys   streams.Keys // the partition Add and Has work on (see Part)
	stored Config
	rec    record // the stored record as one partition uses it (capacity / P)
	lua    string
	add    *redis.Script
	has    *redis.Script
}

// initScript stores the crawl's dedup record unless one is there, and returns the
// stored one. A crawl whose seen key is already a set (it predates dedup records) is
// recorded as set mode, so it keeps what it has seen.
//
// KEYS[1] -> sc:{c}:meta
// KEYS[2] -> sc:{c}:seen
// ARGV[1] -> record to store (JSON)
// ARGV[2] -> record to store when KEYS[2] is a set
// Output: the stored record
var initScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'dedup')
if cur then return cur end
cur = ARGV[1]
if redis.call('TYPE', KEYS[2]).ok == 'set' then cur = ARGV[2] end
redis.call('HSET', KEYS[1], 'dedup', cur)
return cur
`)

// Open returns the crawl's Deduper. The first call for a crawl stores cfg (with what
// it derives from the server: bucket count, whether BF.ADD exists) in the crawl's meta
// hash; later calls, from any process, use the stored config whatever cfg says,
// logging a warning when they differ, because changing the dedup of a running crawl
// would forget what it has seen. Reset the crawl to change it. log may be nil. Each
// partition of the layout has its own filter or buckets, sized for Capacity/P URLs, in
// its own slot; the config is stored crawl-wide.
func Open(ctx context.Context, rdb redis.UniversalClient, layout streams.Layout, cfg Config, log *zap.Logger) (*Deduper, error) {
	if rdb == nil {
		return nil, errors.New("dedup: deduper needs a redis client")
	}
	keys := layout.Global
	if keys.Crawl == "" {
		return nil, errors.New("dedup: deduper needs a crawl name")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	want := record{V: version, Config: cfg}
	native := false
	switch cfg.Mode {
	case Exact:
		want.BucketBits = exactBucketBits(perPartition(cfg.Capacity, len(layout.Parts)), listpackEntries(ctx, rdb))
	case Bloom:
		var err error
		if native, err = hasBloomCommands(ctx, rdb); err != nil {
			return nil, err
		}
		want.Native = native && cfg.ExpireAfter == 0 // generations use the Lua filter (expire.go)
	}
	wantJSON, _ := json.Marshal(want)
	legacyJSON, _ := json.Marshal(record{V: version, Config: Config{Mode: Set}})
	got, err := initScript.Run(ctx, rdb, []string{keys.Meta, keys.Seen}, wantJSON, legacyJSON).Text()
	if err != nil {
		return nil, fmt.Errorf("dedup: store dedup config of crawl %s: %w", keys.Crawl, err)
	}
	var rec record
	if err := json.Unmarshal([]byte(got), &rec); err != nil {
		return nil, fmt.Errorf("dedup: dedup config of crawl %s is unreadable (%q): %w", keys.Crawl, got, err)
	}
	if rec.V != version {
		return nil, fmt.Errorf("dedup: dedup config of crawl %s has version %d, this build reads %d", keys.Crawl, rec.V, version)
	}
	rec.ClockShift = cfg.ClockShift // not stored
	if rec.Config != cfg && log != nil {
		log.Warn("crawl keeps the dedup it started with; reset the crawl to change it",
			zap.String("crawl", keys.Crawl), zap.Any("stored", rec.Config), zap.Any("asked", cfg))
	}
	if rec.Mode == Bloom && rec.Native {
		if rec.Mode != cfg.Mode { // stored by another process: check this server still has BF.*
			if native, err = hasBloomCommands(ctx, rdb); err != nil {
				return nil, err
			}
		}
		if !native {
			return nil, fmt.Errorf("dedup: crawl %s keeps its seen URLs in a RedisBloom filter but the server has no BF.ADD", keys.Crawl)
		}
	}
	stored := rec.Config
	rec.Capacity = perPartition(rec.Capacity, len(layout.Parts))
	for _, k := range layout.Parts {
		switch {
		case rec.Mode == Bloom && rec.Native:
			err = reserveBloom(ctx, rdb, k, rec.Config)
		case rec.Mode == Bloom:
			err = checkBitfield(ctx, rdb, k)
		}
		if err != nil {
			return nil, err
		}
	}
	d := &Deduper{rdb: rdb, layout: layout, keys: layout.Parts[0], stored: stored, rec: rec, lua: rec.luaSeenAdd()}
	d.add = redis.NewScript(d.lua + seenAddBody)
	d.has = redis.NewScript(d.lua + seenHasBody)
	return d, nil
}

// part returns the Deduper working on partition i (Add and Has; Usage covers them all).
func (d *Deduper) part(i int) *Deduper {
	c := *d
	c.keys = d.layout.Parts[i]
	return &c
}

// perPartition is a crawl's capacity shared by p partitions (hosts are spread by hash).
func perPartition(capacity int64, p int) int64 {
	return (capacity + int64(p) - 1) / int64(p)
}

// String describes the layout, for logs and benchmarks.
func (d *Deduper) String() string {
	switch {
	case d.rec.Mode == Exact:
		return describeExact(d.rec.Capacity, d.rec.BucketBits)
	case d.rec.Mode == Bloom && d.rec.Native:
		return fmt.Sprintf("bloom (RedisBloom BF.*): capacity %d, error rate %g (first filter %g), expansion 2", d.rec.Capacity, d.rec.ErrorRate, d.rec.ErrorRate/2)
	case d.rec.Mode == Bloom:
		return describeBloom(bloomLevels(d.rec.Capacity, d.rec.ErrorRate))
	default:
		return "set: one Redis set of fingerprints"
	}
}

// Lua returns Lua source to splice at the top of a script. It defines
//
//	local function seen_add(base, fp)      -- 1 if fp was new (now recorded), else 0
//	local function seen_add_all(base, fps) -- the same for an array of fingerprints:
//	                                       -- an array of 1/0; faster in bloom mode
//	local function seen_has(base, fp)      -- 1 if fp was recorded, else 0 (reads only)
//	local function seen_has_all(base, fps) -- the same for an array
//	local function item_add_new(base, keys, set) -- over the crawl's item keys
//
// and helper locals whose names start with sd_ or item_. base is streams.Keys.Seen of
// the crawl (sc:{c}:seen), passed to the script as a KEYS entry; every key the functions
// touch is base or base followed by ":..." (the builders of keys.go), so it has the
// crawl's hash tag and lies in the slot of base. fp is a request fingerprint: a
// non-empty string, normally the 16 bytes of spiders.Fingerprint (other lengths work
// but take a slower path). A fingerprint repeated in one batch, or across calls in one
// script, is new at most once. The functions need no ARGV: the crawl's stored config
// is built into the source, so the source differs between crawls (build the script
// per Deduper). State read from Redis is cached in script locals for the script's run;
// it is valid because only these functions change it, and scripts run one at a time.
//
// In bloom mode seen_add_all costs about a fifth less Redis CPU per fingerprint than
// seen_add (measured 5.5 against 6.8 µs: one BITFIELD per filter part and one counter
// update per batch instead of one each per fingerprint), so a script with many
// fingerprints should collect them and call it once. In the other modes they cost the
// same.
//
// item_add_new records a crawl's item keys (16-byte fingerprints as they are, each key
// once) and returns a table of booleans, whether each was new (one command per key in
// exact mode, two per 1,000 keys in a set). In exact mode item keys go into buckets
// beside base the way request fingerprints do (about 20 bytes per key against about 72
// in a plain set); the other modes keep them in the set base itself (a Bloom filter
// would drop a false-positive share of new items). set true says the keys are in the
// set at base whatever the mode (ItemKeysInSet).
func (d *Deduper) Lua() string { return d.lua + d.rec.luaItemKeys() }

// ScriptArg returns fingerprint fp as the seen_add_arg of Lua takes it (in
// exact mode split into its bucket and field ahead, so the script does no arithmetic
// per fingerprint): seen_add_arg(base, ScriptArg(fp)) is seen_add(base, fp).
func (d *Deduper) ScriptArg(fp []byte) string { return d.rec.scriptArg(fp) }

// Add records fps and reports, for each, whether it was new. A fingerprint repeated in
// fps is new at most once. In bloom mode a new fingerprint is reported as seen with
// the filter's false-positive rate.
func (d *Deduper) Add(ctx context.Context, fps [][]byte) ([]bool, error) {
	return d.run(ctx, d.add, false, fps)
}

// seenAddBody follows the Lua snippet in the script of Add.
//
// KEYS[1] -> sc:{c}:seen
// ARGV[i] -> fingerprint i
// Output: {1 if fingerprint i was new else 0, ...}
const seenAddBody = `
return seen_add_all(KEYS[1], ARGV)
`

// Has reports, for each of fps, whether it was recorded (or, in bloom mode, is a false
// positive). It changes nothing and runs as a read-only script.
func (d *Deduper) Has(ctx context.Context, fps [][]byte) ([]bool, error) {
	return d.run(ctx, d.has, true, fps)
}

// seenHasBody follows the Lua snippet in the script of Has.
//
// KEYS[1] -> sc:{c}:seen
// ARGV[i] -> fingerprint i
// Output: {1 if fingerprint i was recorded else 0, ...}
const seenHasBody = `
return seen_has_all(KEYS[1], ARGV)
`

// scriptBatch is how many fingerprints one script run takes, so that a long Add
// does not hold Redis for long (about 1 ms per 1,000).
const scriptBatch = 1000

func (d *Deduper) run(ctx context.Context, s *redis.Script, ro bool, fps [][]byte) ([]bool, error) {
	out := make([]bool, 0, len(fps))
	keys := []string{d.keys.Seen}
	for len(fps) > 0 {
		n := min(len(fps), scriptBatch)
		args := make([]any, n)
		for i, fp := range fps[:n] {
			if len(fp) == 0 {
				return nil, errors.New("dedup: empty fingerprint")
			}
			args[i] = fp
		}
		var res []int64
		var err error
		if ro {
			res, err = s.RunRO(ctx, d.rdb, keys, args...).Int64Slice()
		} else {
			res, err = s.Run(ctx, d.rdb, keys, args...).Int64Slice()
		}
		if err == nil && len(res) != n {
			err = fmt.Errorf("%d replies for %d fingerprints", len(res), n)
		}
		if err != nil {
			return nil, fmt.Errorf("dedup: dedup %d fingerprints: %w", n, err)
		}
		for _, r := range res {
			out = append(out, r == 1)
		}
		fps = fps[n:]
	}
	return out, nil
}
