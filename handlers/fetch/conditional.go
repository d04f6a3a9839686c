package fetch

import (
	"context"
	"encoding/binary"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// validators remembers, per URL, what the last fetch's answer carried (ETag,
// Last-Modified) so that a revisit asks with If-None-Match / If-Modified-Since and an
// unchanged page answers 304 without a body. Stored compactly: the URLs' fingerprints
// spread over small hashes (about validatorsPerBucket URLs each at the planned
// capacity, under Redis's listpack limit), field 8 bytes of the fingerprint, value
// "<etag>\n<last-modified as Unix seconds>". Two URLs sharing a bucket and those 8
// bytes would share validators: the server then answers 200 and nothing is lost.
type validators struct {
	rdb     redis.UniversalClient
	layout  streams.Layout
	buckets uint32
}

// validatorsPerBucket is how many URLs a validators hash holds at the planned capacity.
const validatorsPerBucket = 64

func newValidators(rdb redis.UniversalClient, layout streams.Layout, capacity int64) *validators {
	if capacity <= 0 {
		capacity = defaultCapacity
	}
	return &validators{rdb: rdb, layout: layout, buckets: uint32(min(max(capacity/validatorsPerBucket, 1), 1<<24))}
}

// defaultCapacity is Settings.Capacity's default.
const defaultCapacity = 10_000_000

// maxETag bounds a stored ETag; a longer one is not kept (the page is then fetched whole).
const maxETag = 256

// conditional is what a fetch needs to remember for its URL.
type conditional struct {
	key    string // the validators hash of the URL's bucket
	field  string // 8 bytes of the request's fingerprint
	stored bool   // validators were stored for the URL
}

// apply adds the stored validators of req to hreq. It returns nil when req is not a
// plain GET (only those are revisited conditionally).
func (v *validators) apply(ctx context.Context, req *spiders.Request, hreq *http.Request) (*conditional, error) {
	if v == nil || hreq.Method != http.MethodGet || len(req.Body) > 0 {
		return nil, nil
	}
	sum, err := req.Fingerprint()
	if err != nil {
		return nil, nil
	}
	bucket := binary.BigEndian.Uint32(sum[:4]) % v.buckets
	c := &conditional{key: v.layout.ForHost(spiders.HostKey(req.URL)).Validators(bucket), field: string(sum[4:12])}
	val, err := v.rdb.HGet(ctx, c.key, c.field).Result()
	if errors.Is(err, redis.Nil) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	c.stored = true
	etag, lm, _ := strings.Cut(val, "\n")
	if etag != "" && hreq.Header.Get("If-None-Match") == "" {
		hreq.Header.Set("If-None-Match", etag)
	}
	if secs, err := strconv.ParseInt(lm, 10, 64); err == nil && hreq.Header.Get("If-Modified-Since") == "" {
		hreq.Header.Set("If-Modified-Since", time.Unix(secs, 0).UTC().Format(http.TimeFormat))
	}
	return c, nil
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
		if c.stored {
			return v.rdb.HDel(ctx, c.key, c.field).Err()
		}
		return nil
	}
	return v.rdb.HSet(ctx, c.key, c.field, etag+"\n"+lm).Err()
}
