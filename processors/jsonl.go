package processors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"sync"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// JSONL is a sink that appends one JSON object per line to a file. It is idempotent: at
// open it reads the keys of the items already in the file (and cuts a torn last line a
// crash may have left), and it skips items whose key it has written. Concurrent Store
// calls share one write and one fsync (group commit).
type JSONL struct {
	path string
	f    *os.File
	seed maphash.Seed
	keys map[uint64]struct{} // 64-bit hashes of item keys in the file

	reqs chan *writeReq
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

type writeReq struct {
	key  string
	line []byte
	done chan error
	dup  bool
}

// OpenJSONL opens (or creates) path for appending.
func OpenJSONL(path string) (*JSONL, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("processors: open %s: %w", path, err)
	}
	s := &JSONL{path: path, f: f, seed: maphash.MakeSeed(), keys: map[uint64]struct{}{},
		reqs: make(chan *writeReq, 1024), stop: make(chan struct{})}
	if err := s.load(); err != nil {
		_ = f.Close()
		return nil, err
	}
	s.wg.Add(1)
	go s.run()
	return s, nil
}

// load indexes the keys of the items in the file and truncates a torn last line.
func (s *JSONL) load() error {
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("processors: %s: %w", s.path, err)
	}
	r := bufio.NewReaderSize(s.f, 1<<20)
	var good int64
	for lineNo := 1; ; lineNo++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			break // a last line without '\n' is torn: cut below
		}
		if err != nil {
			return fmt.Errorf("processors: read %s: %w", s.path, err)
		}
		key, kerr := recordKey(line)
		if kerr != nil {
			return fmt.Errorf("processors: %s:%d: not an item line: %w", s.path, lineNo, kerr)
		}
		s.keys[maphash.String(s.seed, key)] = struct{}{}
		good += int64(len(line))
	}
	if err := s.f.Truncate(good); err != nil {
		return fmt.Errorf("processors: truncate torn line of %s: %w", s.path, err)
	}
	if _, err := s.f.Seek(good, io.SeekStart); err != nil {
		return fmt.Errorf("processors: %s: %w", s.path, err)
	}
	return nil
}

// recordKey returns the key of an item line written by this sink.
func recordKey(line []byte) (string, error) {
	var rec struct {
		Key string `json:"_key"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(line), &rec); err != nil {
		return "", err
	}
	if rec.Key == "" {
		return "", errors.New("no _key field")
	}
	return rec.Key, nil
}

// Store appends it unless an item with the same key is in the file.
func (s *JSONL) Store(ctx context.Context, it *spiders.Item) (bool, error) {
	rec := it.Record()
	key := it.Key()
	rec["_key"] = key
	line, err := json.Marshal(rec)
	if err != nil {
		return false, fmt.Errorf("processors: encode item %q: %w", key, err)
	}
	req := &writeReq{key: key, line: append(line, '\n'), done: make(chan error, 1)}
	select {
	case s.reqs <- req:
	case <-s.stop:
		return false, errors.New("processors: jsonl sink closed")
	case <-ctx.Done():
		return false, ctx.Err()
	}
	if err := <-req.done; err != nil {
		return false, err
	}
	return !req.dup, nil
}

func (s *JSONL) run() {
	defer s.wg.Done()
	var buf bytes.Buffer
	batchLoop(s.reqs, s.stop, func(batch []*writeReq) { s.write(batch, &buf) })
}

// write appends the new items of batch with one write and one fsync, then answers all.
func (s *JSONL) write(batch []*writeReq, buf *bytes.Buffer) {
	buf.Reset()
	var added []uint64
	inBatch := map[uint64]bool{}
	for _, r := range batch {
		h := maphash.String(s.seed, r.key)
		if _, ok := s.keys[h]; ok || inBatch[h] {
			r.dup = true
			continue
		}
		inBatch[h] = true
		added = append(added, h)
		buf.Write(r.line)
	}
	var err error
	if buf.Len() > 0 {
		if _, err = s.f.Write(buf.Bytes()); err == nil {
			err = s.f.Sync()
		}
		if err != nil {
			err = fmt.Errorf("processors: write %s: %w", s.path, err)
			// The file may now end in a partial line: cut back to what we know is good.
			if off, serr := s.f.Seek(-int64(buf.Len()), io.SeekCurrent); serr == nil {
				_ = s.f.Truncate(off)
			}
		} else {
			for _, h := range added {
				s.keys[h] = struct{}{}
			}
		}
	}
	for _, r := range batch {
		r.done <- err
	}
}

// Close stops the writer and closes the file.
func (s *JSONL) Close(ctx context.Context) error {
	s.once.Do(func() { close(s.stop) })
	s.wg.Wait()
	// Answer anything that raced with close.
	for {
		select {
		case r := <-s.reqs:
			r.done <- errors.New("processors: jsonl sink closed")
			continue
		default:
		}
		break
	}
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("processors: close %s: %w", s.path, err)
	}
	return nil
}
