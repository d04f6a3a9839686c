package fetch

import (
	"context"
	"encoding/binary"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// validators remembers, per URL that may be fetched again, what the last fetch's
// answer carried (ETag, Last-Modified) so that a revisit asks with If-None-Match /
// If-Modified-Since and an unchanged page answers 304 without a body, whatever
// schedules the revisit (see revisited). Stored compactly: the URLs' fingerprints
// spread over small hashes (about validatorsPerBucket URLs each at the planned
// capacity, under Redis's listpack limit), field 8 bytes of the fingerprint, value
// "<etag>\n<last-modified as Unix seconds>". Two URLs sharing a bucket and those 8
// bytes would share validators: the server then answers 200 and nothing is lost.
//
// A crawl that forgets the URLs it saw (settings.revisit.forget_after) forgets their
// validators on the same clock: they are kept in generations of forget_after (the
// buckets of a generation under streams.Keys.ValidatorsOf), a fetch reads the current
// generation and the one before, and each bucket expires once no fetch reads its
// generation. Validators not written for forget_after are so gone between forget_after
// and twice it later, never earlier; a 304 carries those of the previous generation
// into the current one. Other crawls keep them for the crawl's life, as the seen set
// keeps its URLs.
type validators struct {
	rdb     redis.UniversalClient
	layout  streams.Layout
	buckets uint32
	every   bool                  // settings.revisit.after: any URL may be queued again
	rules   []spiders.RevisitRule // settings.revisit.rules, compiled
	forget  time.Duration         // settings.revisit.forget_after; 0: never
	now     func() time.Time
}

// validatorsPerBucket is how many URLs a validators hash holds at the planned capacity.
const validatorsPerBucket = 64

// newValidators returns the validators of the crawl whose settings are s (validated:
// its revisit rules compile).
func newValidators(rdb redis.UniversalClient, layout streams.Layout, s spiders.Settings) *validators {
	capacity := s.Capacity
	if capacity <= 0 {
		capacity = defaultCapacity
	}
	v := &validators{rdb: rdb, layout: layout, buckets: uint32(min(max(capacity/validatorsPerBucket, 1), 1<<24)),
		every: s.Revisit.After > 0, forget: s.Revisit.ForgetAfter, now: time.Now}
	for _, r := range slices.Clone(s.Revisit.Rules) {
		if r.Compile() == nil { // an uncompiled rule would match every URL
			v.rules = append(v.rules, r)
		}
	}
	return v
}

// defaultCapacity is Settings.Capacity's default.
const defaultCapacity = 10_000_000

// maxETag bounds a stored ETag; a longer one is not kept (the page is then fetched whole).
const maxETag = 256

// revisited reports whether req's URL may be fetched again, the only URLs whose
// validators are kept (a one-off crawl keeps none): every URL when revisit.after lets
// URLs through dedup again, one a revisit rule schedules, and a request queued whatever
// dedup says (dont_filter: a seed pushed again, a callback fetching a page again). A
// URL forget_after lets through again is new to the crawl: it is fetched whole.
func (v *validators) revisited(req *spiders.Request) bool {
	return v.every || req.DontFilter || spiders.RevisitFor(v.rules, req.URL) != nil
}

// conditional is what a fetch needs to remember for its URL.
type conditional struct {
	key   string // the validators hash the answer's validators go to
	from  string // the hash they were read from ("": none stored)
	field string // 8 bytes of the request's fingerprint
	value string // what was read
	gen   int64  // key's generation (forget_after)
}

// apply adds the stored validators of req to hreq. It returns nil when req is not a
// plain GET of a URL that may be fetched again (only those are revisited
// conditionally).
func (v *validators) apply(ctx context.Context, req *spiders.Request, hreq *http.Request) (*conditional, error) {
	if v == nil || hreq.Method != http.MethodGet || len(req.Body) > 0 || !v.revisited(req) {
		return nil, nil
	}
	sum, err := req.Fingerprint()
	if err != nil {
		return nil, nil
	}
	bucket := binary.BigEndian.Uint32(sum[:4]) % v.buckets
	k := v.layout.ForHost(spiders.HostKey(req.URL))
	c := &conditional{key: k.Validators(bucket), field: string(sum[4:12])}
	if err := v.read(ctx, c, k, bucket); err != nil {
		return nil, err
	}
	if c.from == "" {
		return c, nil
	}
	etag, lm, _ := strings.Cut(c.value, "\n")
	if etag != "" && hreq.Header.Get("If-None-Match") == "" {
		hreq.Header.Set("If-None-Match", etag)
	}
	if secs, err := strconv.ParseInt(lm, 10, 64); err == nil && hreq.Header.Get("If-Modified-Since") == "" {
		hreq.Header.Set("If-Modified-Since", time.Unix(secs, 0).UTC().Format(http.TimeFormat))
	}
	return c, nil
}

// read looks c's URL up: in its bucket, or, when the crawl forgets, in its bucket of
// the current generation, then of the one before (one round trip).
func (v *validators) read(ctx context.Context, c *conditional, k streams.Keys, bucket uint32) error {
	if v.forget <= 0 {
		val, err := v.rdb.HGet(ctx, c.key, c.field).Result()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err != nil {
			return err
		}
		c.from, c.value = c.key, val
		return nil
	}
	c.gen = v.now().UnixMilli() / v.forget.Milliseconds()
	c.key = k.ValidatorsOf(c.gen, bucket)
	prev := k.ValidatorsOf(c.gen-1, bucket)
	var cur, old *redis.StringCmd
	// The pipeline's error is its first command's; each is looked at below.
	_, _ = v.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		cur = p.HGet(ctx, c.key, c.field)
		old = p.HGet(ctx, prev, c.field)
		return nil
	})
	for _, r := range []struct {
		key string
		cmd *redis.StringCmd
	}{{c.key, cur}, {prev, old}} {
		val, err := r.cmd.Result()
		if err == nil {
			c.from, c.value = r.key, val
			return nil
		}
		if !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

// save stores the validators of a 2xx answer (or forgets those of a page that no longer
// sends any).
func (v *validators) save(ctx context.Context, c *conditional, h http.Header) error {
	if c == nil {
		return nil
	}
	etag := h.Get("ETag")
	if len(etag) > maxETag || strings.Contains(etag, "\n") {
		etag = ""
	}
	lm := ""
	if t, err := http.ParseTime(h.Get("Last-Modified")); err == nil {
		lm = strconv.FormatInt(t.Unix(), 10)
	}
	if etag == "" && lm == "" {
		if c.from != "" {
			return v.rdb.HDel(ctx, c.from, c.field).Err()
		}
		return nil
	}
	return v.write(ctx, c, etag+"\n"+lm)
}

// drop deletes the validators c's URL was asked with (nothing when none were stored):
// an answer other than a 2xx or a 304 means they no longer describe the page.
func (v *validators) drop(ctx context.Context, c *conditional) error {
	if c == nil || c.from == "" {
		return nil
	}
	return v.rdb.HDel(ctx, c.from, c.field).Err()
}

// notModified keeps the validators a 304 confirmed: those read from the previous
// generation go to the current one, so that a page that keeps answering 304 is not
// forgotten while it is fetched.
func (v *validators) notModified(ctx context.Context, c *conditional) error {
	if c == nil || c.from == "" || c.from == c.key {
		return nil
	}
	return v.write(ctx, c, c.value)
}

// write stores value as c's validators in c.key, with the generation's expiry when the
// crawl forgets.
func (v *validators) write(ctx context.Context, c *conditional, value string) error {
	if v.forget <= 0 {
		return v.rdb.HSet(ctx, c.key, c.field, value).Err()
	}
	// Generation g is read until generation g+1 ends.
	end := (c.gen + 2) * v.forget.Milliseconds()
	return saveValidatorsScript.Run(ctx, v.rdb, []string{c.key}, c.field, value, end).Err()
}

// saveValidatorsScript stores a URL's validators in a bucket of a generation and sets
// the bucket's expiry, in one step: a bucket written without its expiry would outlive
// its generation.
//
// KEYS[1] -> sc:{c}:validators:g<gen>:<bucket>
// ARGV[1] -> field (8 bytes of the URL's fingerprint), ARGV[2] -> "<etag>\n<last-modified>",
// ARGV[3] -> when no fetch reads the generation any more (Unix ms)
// Output: 1
var saveValidatorsScript = redis.NewScript(`
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
return 1
`)
