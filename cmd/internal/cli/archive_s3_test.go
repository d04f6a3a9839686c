package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/zstd"
	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/processors/warcs3"
	"github.com/streamcrawl/streamcrawl/processors/warcs3/warcs3test"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
)

// s3Bucket is a prefix of a bucket on an S3 server in the test process.
type s3Bucket struct {
	srv   *warcs3test.Server
	store *warcs3.Store
	ctx   context.Context
}

func startBucket(t *testing.T, prefix string) *s3Bucket {
	t.Helper()
	srv := warcs3test.Start(t)
	st, err := warcs3.New(t.Context(), srv.Config(prefix))
	if err != nil {
		t.Fatal(err)
	}
	return &s3Bucket{srv: srv, store: st, ctx: t.Context()}
}

// count returns the number of WARC files uploaded so far.
func (b *s3Bucket) count() int {
	keys, _ := b.store.Files(b.ctx)
	return len(keys)
}

// download copies the WARC files of the prefix to a new directory and returns it.
func (b *s3Bucket) download(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	keys, err := b.store.Files(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		o, err := b.store.Open(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, path.Base(key)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, o); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		o.Close()
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// publishShopDict publishes a response dictionary trained on demo shop pages as the
// crawl's, the way a fetch process does once it has seen enough responses: every fetch
// process started after it compresses each response with it. The dictionary is trained
// here on the pages' bodies, with the options of the fetch process's training
// (handlers/internal/wire.TrainDict, which trains on whole stored responses and which
// this package may not import): any zstd dictionary with an ID is one the fetch
// processes load and compress with.
func publishShopDict(t *testing.T, rdb redis.UniversalClient, crawl string) {
	t.Helper()
	site := demosite.New(500)
	var samples [][]byte
	for id := 1; id <= 64; id++ {
		u := fmt.Sprintf("http://127.0.0.1/p/%d", id)
		rec := httptest.NewRecorder()
		site.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		samples = append(samples, rec.Body.Bytes())
	}
	data, err := dict.BuildZstdDict(samples, dict.Options{MaxDictSize: 64 << 10, HashBytes: 8, ZstdLevel: zstd.SpeedFastest})
	if err != nil {
		t.Fatal(err)
	}
	info, err := zstd.InspectDictionary(data)
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatUint(uint64(info.ID()), 10)
	if err := rdb.HSet(t.Context(), streams.NewKeys(crawl).Dicts, id, data, "current", id).Err(); err != nil {
		t.Fatal(err)
	}
}
