package main

import (
	"context"
	"io"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/streamcrawl/streamcrawl/processors/warcs3"
	"github.com/streamcrawl/streamcrawl/processors/warcs3/warcs3test"
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
