package handlers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// Response dictionaries (wire.Dict) in Redis: the first fetch process to have seen
// dictSamples responses of a crawl trains a dictionary and publishes it in the crawl's
// dicts hash, unless one is there already (exactly one wins); every fetch process
// compresses with it once it sees it. Decoders load a dictionary by the ID the
// response's frame names, once per process.

const (
	// dictSamples responses train the dictionary (32 of at most 16 KB, hashing 8 bytes,
	// train in half the CPU of 64 hashing 6 and compress the demo shop's 25 KB pages to
	// 26.0% against 27.4%; 64 compressed it as well as 128 of 32 KB).
	dictSamples = 32
	// dictSampleMax caps the bytes taken from one response for training.
	dictSampleMax = 16 << 10
	// dictAttempts bounds the trainings a process starts for a crawl (one failed: retried
	// on later responses).
	dictAttempts = 3
	// dictPoll is how often a fetch process without a dictionary looks for one.
	dictPoll = 2 * time.Second
)

// responseDicts is a crawl's dictionary state in one process.
type responseDicts struct {
	rdb   redis.UniversalClient
	key   string
	stats string // the crawl's stats hash (loadDict counts its loads there)
	log   *zap.Logger
	cur   atomic.Pointer[wire.Dict]
	// first loads the published dictionary before the process's first response, so
	// a process started after it was published compresses every response with it.
	first sync.Once

	mu       sync.Mutex
	samples  [][]byte
	training bool
	attempts int // trainings started; at most dictAttempts
	checked  time.Time
	checking bool
}

var (
	dictsMu    sync.Mutex
	dictsByKey = map[redis.UniversalClient]map[string]*responseDicts{}
)

// dictsOf returns the process's dictionary state of the crawl whose global keys are k.
func dictsOf(rdb redis.UniversalClient, k streams.Keys, log *zap.Logger) *responseDicts {
	dictsMu.Lock()
	defer dictsMu.Unlock()
	m := dictsByKey[rdb]
	if m == nil {
		m = map[string]*responseDicts{}
		dictsByKey[rdb] = m
	}
	d := m[k.Dicts]
	if d == nil {
		if log == nil {
			log = zap.NewNop()
		}
		d = &responseDicts{rdb: rdb, key: k.Dicts, stats: k.Stats, log: log}
		m[k.Dicts] = d
	}
	return d
}

// responseEncoder returns the encoder of fetched responses for the responses stream: at
// the spider's compression setting (its default depends on whether the crawl retains
// responses once parsed: retained), with the crawl's dictionary once there is one if
// that setting is a zstd level, unless the spider turned the dictionary off.
func responseEncoder(s spiders.Settings, retained bool, rdb redis.UniversalClient, layout streams.Layout, counters *streams.Counters, log *zap.Logger) func(context.Context, *spiders.Response) ([]byte, error) {
	c := wire.CompressionFor(s.ResponseCompression, retained)
	if s.ResponseDict == wire.DictOff || !wire.CompressionUsesDict(c) || rdb == nil {
		return func(_ context.Context, res *spiders.Response) ([]byte, error) {
			return wire.MarshalWith(res, c, nil)
		}
	}
	return func(ctx context.Context, res *spiders.Response) ([]byte, error) {
		return marshalResponse(ctx, dictsOf(rdb, layout.Global, log), counters, c, res)
	}
}

// marshalResponse encodes res at the compression level c with the crawl's dictionary d
// once there is one.
func marshalResponse(ctx context.Context, d *responseDicts, counters *streams.Counters, c string, res *spiders.Response) ([]byte, error) {
	d.first.Do(func() {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := d.load(lctx); err != nil {
			d.log.Debug("response dictionary not loaded", zap.Error(err))
		}
		d.mu.Lock()
		d.checked = time.Now()
		d.mu.Unlock()
	})
	if cur := d.cur.Load(); cur != nil {
		if counters != nil {
			counters.Add("responses_dict_encoded", 1)
		}
		return wire.MarshalWith(res, c, cur)
	}
	d.sample(ctx, res)
	return wire.MarshalWith(res, c, nil)
}

// sample keeps res for training, trains once there are enough samples, and looks in
// Redis now and then for a dictionary another process published. Training and looking
// run in the background: a fetch never waits for them.
func (d *responseDicts) sample(ctx context.Context, res *spiders.Response) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.checking && time.Since(d.checked) >= dictPoll {
		d.checking = true
		go func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := d.load(cctx); err != nil && !errors.Is(err, redis.ErrClosed) { // closed: the run is over
				d.log.Debug("response dictionary not loaded", zap.Error(err))
			}
			d.mu.Lock()
			d.checking, d.checked = false, time.Now()
			d.mu.Unlock()
		}()
	}
	if d.training || d.attempts >= dictAttempts || len(d.samples) >= dictSamples {
		return
	}
	js, err := wire.Plain(res)
	if err != nil {
		return
	}
	if len(js) > dictSampleMax {
		js = js[:dictSampleMax]
	}
	d.samples = append(d.samples, js)
	if len(d.samples) < dictSamples {
		return
	}
	d.training = true
	d.attempts++
	samples := d.samples
	d.samples = nil
	go func() {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := d.train(tctx, samples); err != nil {
			if errors.Is(err, redis.ErrClosed) {
				return // the run closed its client: nothing to try again
			}
			d.log.Warn("response dictionary not trained; trying again on later responses", zap.Error(err))
			d.mu.Lock()
			d.training = false
			d.mu.Unlock()
		}
	}()
}

// load installs the crawl's current dictionary, if one is published. With durability
// replicated it is used only once the replicas have it (see loadDict): a failover must
// not lose the dictionary of responses already stored.
func (d *responseDicts) load(ctx context.Context) error {
	id, err := d.rdb.HGet(ctx, d.key, "current").Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("handlers: response dictionary: %w", err)
	}
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		return fmt.Errorf("handlers: response dictionary id %q: %w", id, err)
	}
	rd, err := loadDict(streams.Durable(ctx), d.rdb, d.key, d.stats, uint32(n))
	if err != nil {
		return err
	}
	d.cur.Store(rd)
	return nil
}

// republish writes the dictionary this process compresses with back into the crawl's
// dicts hash (current too, unless another is), after a failover that may have lost it:
// every response it encoded stays readable.
func (d *responseDicts) republish(ctx context.Context) {
	rd := d.cur.Load()
	if rd == nil {
		return
	}
	id := strconv.FormatUint(uint64(rd.ID()), 10)
	pipe := d.rdb.Pipeline()
	pipe.HSet(ctx, d.key, id, rd.Bytes())
	pipe.HSetNX(ctx, d.key, "current", id)
	if _, err := pipe.Exec(streams.Durable(ctx)); err != nil {
		d.log.Warn("response dictionary not published again after a failover", zap.Uint32("id", rd.ID()), zap.Error(err))
	}
}

// forgetResponseDicts is told of a failover: the process's dictionaries go back into
// Redis, and the dictionaries it found missing are looked for again. The write has
// ctx's values and 10 s, even when ctx (the run's) ends meanwhile: a dictionary the
// failover lost must be back for the responses compressed with it.
func forgetResponseDicts(ctx context.Context, rdb redis.UniversalClient, k streams.Keys, log *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	dictsOf(rdb, k, log).republish(ctx)
	dictMissing.Clear()
}

// publishDictScript publishes a dictionary unless the crawl has one.
// KEYS[1] -> sc:{c}:dicts
// ARGV[1] -> dictionary ID
// ARGV[2] -> dictionary (zstd format)
// Output: the ID of the crawl's dictionary (ARGV[1] if it won).
var publishDictScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'current')
if cur then return cur end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2], 'current', ARGV[1])
return ARGV[1]
`)

// train builds a dictionary from samples and publishes it; the crawl's dictionary (this
// one, or the one another process published first) becomes current.
func (d *responseDicts) train(ctx context.Context, samples [][]byte) error {
	start := time.Now()
	rd, err := wire.TrainDict(samples)
	if err != nil {
		return err
	}
	// A pipeline, durable: with durability replicated the dictionary is used only once
	// the replicas have it.
	pipe := d.rdb.Pipeline()
	pub := publishDictScript.Eval(ctx, pipe, []string{d.key}, rd.ID(), rd.Bytes())
	_, _ = pipe.Exec(streams.Durable(ctx))
	won, err := pub.Text()
	if err != nil {
		return fmt.Errorf("handlers: publish response dictionary: %w", err)
	}
	if won == strconv.FormatUint(uint64(rd.ID()), 10) {
		wire.RegisterDict(rd)
		d.cur.Store(rd)
		d.log.Info("response dictionary trained", zap.Uint32("id", rd.ID()), zap.Int("samples", len(samples)),
			zap.Int("bytes", len(rd.Bytes())), zap.Duration("took", time.Since(start)))
		return nil
	}
	return d.load(ctx)
}

// loadDict returns the dictionary id of the hash key, registered for decoding. Under a
// durable ctx (streams.Durable) the read goes with a write of its own (the
// response_dict_loads counter of the stats hash, in the same slot) in one pipeline, so
// that the wait for replicas after it covers the dictionary, written before.
func loadDict(ctx context.Context, rdb redis.UniversalClient, key, stats string, id uint32) (*wire.Dict, error) {
	pipe := rdb.Pipeline()
	get := pipe.HGet(ctx, key, strconv.FormatUint(uint64(id), 10))
	pipe.HIncrBy(ctx, stats, "response_dict_loads", 1)
	_, _ = pipe.Exec(ctx)
	data, err := get.Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: %w (id %d, not in %s)", streams.ErrPoison, wire.ErrUnknownDict, id, key)
	}
	if err != nil {
		return nil, fmt.Errorf("handlers: load response dictionary %d: %w", id, err)
	}
	rd, err := wire.NewDict(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	if rd.ID() != id {
		return nil, fmt.Errorf("%w: handlers: dictionary stored as %d has id %d", streams.ErrPoison, id, rd.ID())
	}
	wire.RegisterDict(rd)
	return rd, nil
}

// dictMissing remembers the dictionary IDs known missing, per crawl key, so a bad entry
// costs one Redis read per process.
var dictMissing sync.Map // key+"/"+id -> struct{}

// ensureResponseDict registers the dictionary a stored response needs, loading it from
// the crawl's dicts hash (global keys k) once per process. A dictionary missing from
// Redis is a poison error (streams.ErrPoison wrapping wire.ErrUnknownDict); a Redis
// failure is not (the delivery is retried).
func ensureResponseDict(ctx context.Context, rdb redis.UniversalClient, k streams.Keys, payload []byte) error {
	id := wire.DictID(payload)
	if id == 0 || wire.DictRegistered(id) {
		return nil
	}
	if _, missing := dictMissing.Load(k.Dicts + "/" + strconv.FormatUint(uint64(id), 10)); missing {
		return fmt.Errorf("%w: %w (id %d, not in %s)", streams.ErrPoison, wire.ErrUnknownDict, id, k.Dicts)
	}
	_, err := loadDict(ctx, rdb, k.Dicts, k.Stats, id)
	if errors.Is(err, wire.ErrUnknownDict) {
		dictMissing.Store(k.Dicts+"/"+strconv.FormatUint(uint64(id), 10), struct{}{})
	}
	return err
}

// decodeResponse decodes a stored response of the crawl whose global keys are k, its
// body at most maxBody, after registering the dictionary it needs (ensureResponseDict;
// not without a client). A payload that is malformed or too large is poison.
func decodeResponse(ctx context.Context, rdb redis.UniversalClient, k streams.Keys, payload []byte, maxBody int64) (*spiders.Response, error) {
	if rdb != nil {
		if err := ensureResponseDict(ctx, rdb, k, payload); err != nil {
			return nil, err
		}
	}
	res, err := wire.UnmarshalLimit(payload, maxBody)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	return res, nil
}
