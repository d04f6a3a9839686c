package processors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// JSONL is a sink that appends one JSON object per line to a file. It is idempotent: at
// open it reads the keys of the items already in the file (and cuts a torn last line a
// crash may have left), and it skips items whose key is among the last 131,072 it has
// written (3 MB, whatever the size of the file): an item delivered again after a crash
// is one of those, since the crawl's item dedup (dedup_items, default on) sends each key
// to the store stage once and the stage acks an item only once it is written (see
// keyWindowSize). A versioned item (_version, see spiders.Settings.ItemVersioned) is
// skipped only when the same version of its key was written: each new version is
// appended, the last line of a key holding its last version. Concurrent Store calls
// share one write and one fsync (group commit).
type JSONL struct {
	file *appendFile[*writeReq]
	buf  bytes.Buffer // the writer's
}

type writeReq struct {
	key  string
	line []byte
	done chan error
	dup  bool
}

// OpenJSONL opens (or creates) path for appending.
func OpenJSONL(path string) (*JSONL, error) {
	return openJSONL(path, keyWindowSize)
}

// openJSONL is OpenJSONL remembering the last window keys written.
func openJSONL(path string, window int) (*JSONL, error) {
	file, err := openAppendFile[*writeReq](path, window)
	if err != nil {
		return nil, err
	}
	s := &JSONL{file: file}
	if err := s.load(); err != nil {
		_ = file.f.Close()
		return nil, err
	}
	file.start(s.write)
	return s, nil
}

// load indexes the keys of the items in the file and truncates a torn last line.
func (s *JSONL) load() error {
	a := s.file
	if _, err := a.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("processors: %s: %w", a.path, err)
	}
	r := bufio.NewReaderSize(a.f, 1<<20)
	var good int64
	for lineNo := 1; ; lineNo++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			break // a last line without '\n' is torn: cut below
		}
		if err != nil {
			return fmt.Errorf("processors: read %s: %w", a.path, err)
		}
		key, kerr := recordKey(line)
		if kerr != nil {
			return fmt.Errorf("processors: %s:%d: not an item line: %w", a.path, lineNo, kerr)
		}
		a.index(key)
		good += int64(len(line))
	}
	return a.cut(good)
}

// recordKey returns the window key (windowKey) of an item line written by this sink.
func recordKey(line []byte) (string, error) {
	var rec struct {
		Key     string `json:"_key"`
		Version int    `json:"_version"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(line), &rec); err != nil {
		return "", err
	}
	if rec.Key == "" {
		return "", errors.New("no _key field")
	}
	return windowKey(rec.Key, rec.Version), nil
}

// Store appends it unless an item with the same key (and version) is in the file.
func (s *JSONL) Store(ctx context.Context, it *spiders.Item) (bool, error) {
	rec := it.Record()
	key := it.Key()
	rec["_key"] = key
	line, err := json.Marshal(rec)
	if err != nil {
		return false, fmt.Errorf("processors: encode item %q: %w", key, err)
	}
	req := &writeReq{key: windowKey(key, it.Version), line: append(line, '\n'), done: make(chan error, 1)}
	if err := s.file.submit(ctx, req, req.done, "jsonl"); err != nil {
		return false, err
	}
	return !req.dup, nil
}

// write appends the new items of batch with one write and one fsync, then answers all.
func (s *JSONL) write(batch []*writeReq) {
	s.buf.Reset()
	keys := s.file.newBatch()
	for _, r := range batch {
		if keys.known(r.key) {
			r.dup = true
			continue
		}
		keys.add(r.key)
		s.buf.Write(r.line)
	}
	var err error
	if s.buf.Len() > 0 {
		if err = s.file.append(s.buf.Bytes()); err == nil {
			keys.commit()
		}
	}
	for _, r := range batch {
		r.done <- err
	}
}

// Close stops the writer and closes the file.
func (s *JSONL) Close(ctx context.Context) error {
	return s.file.close("jsonl", func(r *writeReq, err error) { r.done <- err })
}
