package warcs3

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/streamcrawl/streamcrawl/processors/warc"
)

// indexDir holds, under the prefix, one object per uploaded WARC file listing its
// response record IDs.
const indexDir = "_index"

// Store writes WARC files to a bucket. Safe for concurrent use.
type Store struct {
	cl             *minio.Client
	bucket, prefix string
}

// New connects to the bucket of cfg (environment defaults applied) and checks it exists.
func New(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.FromEnv()
	if cfg.Bucket == "" {
		return nil, errors.New("warcs3: no bucket")
	}
	cl, err := cfg.client()
	if err != nil {
		return nil, err
	}
	ok, err := cl.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("warcs3: bucket %s at %s: %w", cfg.Bucket, cfg.Endpoint, err)
	}
	if !ok {
		return nil, fmt.Errorf("warcs3: bucket %s at %s does not exist", cfg.Bucket, cfg.Endpoint)
	}
	return &Store{cl: cl, bucket: cfg.Bucket, prefix: cfg.Prefix}, nil
}

// Key returns the object key of a WARC file (by its base name).
func (s *Store) Key(name string) string { return path.Join(s.prefix, name) }

func (s *Store) indexKey(name string) string { return path.Join(s.prefix, indexDir, name+".ids") }

// Index lists what the bucket holds under the prefix: the response record IDs of every
// uploaded file, and the files' names.
func (s *Store) Index(ctx context.Context) (ids []string, names map[string]bool, err error) {
	names = map[string]bool{}
	dir := path.Join(s.prefix, indexDir) + "/"
	for obj := range s.cl.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: dir, Recursive: true}) {
		if obj.Err != nil {
			return nil, nil, fmt.Errorf("warcs3: list %s: %w", dir, obj.Err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(obj.Key, dir), ".ids")
		names[name] = true
		o, err := s.cl.GetObject(ctx, s.bucket, obj.Key, minio.GetObjectOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("warcs3: get %s: %w", obj.Key, err)
		}
		sc := bufio.NewScanner(o)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				ids = append(ids, line)
			}
		}
		err = sc.Err()
		o.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("warcs3: read %s: %w", obj.Key, err)
		}
	}
	return ids, names, nil
}

// Upload puts a closed WARC file under its key, then its index object, then removes
// the local file. Cut short anywhere, it can be done again: the same keys are
// overwritten, and the local file stays until both objects are in the bucket.
func (s *Store) Upload(ctx context.Context, f warc.ClosedFile) error {
	st, err := os.Stat(f.Path)
	if err != nil {
		return fmt.Errorf("warcs3: %w", err)
	}
	name := filepath.Base(f.Path)
	if st.Size() > 0 {
		_, err = s.cl.FPutObject(ctx, s.bucket, s.Key(name), f.Path, minio.PutObjectOptions{ContentType: "application/warc"})
		if err != nil {
			return fmt.Errorf("warcs3: put %s: %w", s.Key(name), err)
		}
		idx := []byte(strings.Join(f.IDs, "\n") + "\n")
		_, err = s.cl.PutObject(ctx, s.bucket, s.indexKey(name), bytes.NewReader(idx), int64(len(idx)),
			minio.PutObjectOptions{ContentType: "text/plain"})
		if err != nil {
			return fmt.Errorf("warcs3: put %s: %w", s.indexKey(name), err)
		}
	}
	if err := os.Remove(f.Path); err != nil {
		return fmt.Errorf("warcs3: %w", err)
	}
	return nil
}

// Files lists the keys of the WARC files under the prefix.
func (s *Store) Files(ctx context.Context) ([]string, error) {
	var keys []string
	dir := s.prefix + "/"
	if s.prefix == "" {
		dir = ""
	}
	for obj := range s.cl.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: dir}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("warcs3: list %s: %w", dir, obj.Err)
		}
		if strings.HasSuffix(obj.Key, ".warc.gz") {
			keys = append(keys, obj.Key)
		}
	}
	return keys, nil
}

// Open reads the object of a key.
func (s *Store) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	o, err := s.cl.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("warcs3: get %s: %w", key, err)
	}
	return o, nil
}
