package warc

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultMaxFileSize is the size past which a Writer starts a new file.
const DefaultMaxFileSize = 1 << 30

// Writer appends records to WARC files in a directory, one gzip member per record,
// starting a new file once the current one passes MaxFileSize. It knows the response
// record IDs of every file in the directory (read when it opens), so Has tells a page
// already archived. Safe for concurrent use.
type Writer struct {
	dir, prefix string
	maxSize     int64
	closed      func(ClosedFile)
	taken       func(name string) bool
	found       map[string]bool // base names of the files in dir at open: never reused

	mu      sync.Mutex
	written uint64 // pages written (not necessarily synced)
	syncMu  sync.Mutex
	synced  uint64 // pages known to be on disk
	f       *os.File
	size    int64
	seq     int
	index   map[string]bool // response record IDs in the directory
	fileIDs []string        // response record IDs in f
	zw      *gzip.Writer
	buf     bytes.Buffer
}

// Open opens dir (created if missing) for writing files named prefix-<time>-<n>.warc.gz.
// It reads every .warc.gz file there: response record IDs go to the index, and a file
// whose last record was cut short (a killed writer) is truncated after its last whole
// record. maxSize 0 means DefaultMaxFileSize.
func Open(dir, prefix string, maxSize int64) (*Writer, error) {
	return OpenWith(dir, prefix, Options{MaxFileSize: maxSize})
}

// Options tune a Writer beyond Open's arguments.
type Options struct {
	// MaxFileSize rotates files past this size. Default DefaultMaxFileSize.
	MaxFileSize int64
	// Closed, if set, is told of every file the Writer will not write again: each file
	// found in the directory at open (once recovered), each file rotated out, and the
	// last one at Close. It is called with the Writer's lock held: it must not block
	// nor call the Writer. The file is the caller's from then on (to upload, move, delete).
	Closed func(ClosedFile)
	// Known lists response record IDs archived elsewhere (files uploaded and removed
	// from the directory): WritePage skips them like those of the files in the directory.
	Known []string
	// Taken, if set, reports file names (base names) that exist elsewhere: a new file
	// never takes one of them.
	Taken func(name string) bool
}

// ClosedFile is a file a Writer has finished with.
type ClosedFile struct {
	// Path is the file's path in the directory.
	Path string
	// IDs are the response record IDs it holds.
	IDs []string
}

// OpenWith is Open with Options.
func OpenWith(dir, prefix string, opts Options) (*Writer, error) {
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = DefaultMaxFileSize
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("warc: %w", err)
	}
	w := &Writer{dir: dir, prefix: prefix, maxSize: opts.MaxFileSize, closed: opts.Closed, taken: opts.Taken,
		index: map[string]bool{}, found: map[string]bool{}}
	for _, id := range opts.Known {
		w.index[id] = true
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if err != nil {
		return nil, fmt.Errorf("warc: %w", err)
	}
	sort.Strings(files)
	for _, name := range files {
		w.found[filepath.Base(name)] = true
		ids, err := w.recover(name)
		if err != nil {
			return nil, err
		}
		if w.closed != nil {
			w.mu.Lock()
			w.closed(ClosedFile{Path: name, IDs: ids})
			w.mu.Unlock()
		}
	}
	w.zw, _ = gzip.NewWriterLevel(&w.buf, gzip.DefaultCompression)
	return w, nil
}

// recover indexes one file, cuts a torn tail and returns its response record IDs.
func (w *Writer) recover(name string) ([]string, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("warc: %w", err)
	}
	defer f.Close()
	r, err := NewReader(f)
	if err != nil {
		return nil, err
	}
	var ids []string
	// A page is its request record then its response record: the good part ends after
	// the last response (a request alone at the end is half a page).
	var good int64
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) && r.Offset() == good {
			return ids, nil
		}
		if err != nil {
			if terr := f.Truncate(good); terr != nil {
				return nil, fmt.Errorf("warc: truncate torn tail of %s: %w", name, terr)
			}
			return ids, f.Sync()
		}
		if rec.Type() == TypeResponse {
			w.index[rec.ID()] = true
			ids = append(ids, rec.ID())
		}
		if rec.Type() != TypeRequest {
			good = r.Offset()
		}
	}
}

// Has reports whether a response record with this ID is in the directory.
func (w *Writer) Has(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.index[id]
}

// Len returns the number of response records in the directory.
func (w *Writer) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.index)
}

// WritePage appends p's request and response records and returns once they are synced
// to disk (concurrent calls share fsyncs), unless its response record is there already.
// It reports whether it wrote.
func (w *Writer) WritePage(p *Page) (bool, error) {
	req, res := p.Records()
	w.mu.Lock()
	if w.index[res.ID()] {
		// Written already, maybe by a call still waiting for its fsync: return once
		// that is done too.
		upTo, f := w.written, w.f
		w.mu.Unlock()
		if f == nil {
			return false, nil // found in a file on disk when the directory was opened
		}
		return false, w.syncTo(upTo, f)
	}
	if w.f == nil || w.size >= w.maxSize {
		if err := w.rotate(); err != nil {
			w.mu.Unlock()
			return false, err
		}
	}
	var out bytes.Buffer
	for _, rec := range []*Record{req, res} {
		w.buf.Reset()
		w.zw.Reset(&w.buf)
		var plain bytes.Buffer
		rec.encode(&plain)
		w.zw.Write(plain.Bytes())
		if err := w.zw.Close(); err != nil {
			w.mu.Unlock()
			return false, fmt.Errorf("warc: gzip: %w", err)
		}
		out.Write(w.buf.Bytes())
	}
	if _, err := w.f.Write(out.Bytes()); err != nil {
		w.mu.Unlock()
		return false, fmt.Errorf("warc: write %s: %w", w.f.Name(), err)
	}
	w.size += int64(out.Len())
	w.index[res.ID()] = true
	w.fileIDs = append(w.fileIDs, res.ID())
	w.written++
	mine, f := w.written, w.f
	w.mu.Unlock()
	// Group commit: one fsync covers every page written before it, so concurrent
	// writers share it.
	if err := w.syncTo(mine, f); err != nil {
		w.mu.Lock()
		delete(w.index, res.ID()) // not known to be on disk: let a redelivery write it
		w.mu.Unlock()
		return false, err
	}
	return true, nil
}

// syncTo returns once page n is on disk, syncing f (the file it went to) unless a sync
// since has covered it.
func (w *Writer) syncTo(n uint64, f *os.File) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if w.synced >= n {
		return nil
	}
	w.mu.Lock()
	upTo, cur := w.written, w.f
	w.mu.Unlock()
	if cur != f {
		return nil // rotated: rotate synced f before closing it
	}
	if err := f.Sync(); err != nil {
		if errors.Is(err, os.ErrClosed) {
			// rotate closed f after the check above, and synced it before closing: the
			// page is on disk. (Reporting an error here made the caller drop the page
			// from the index and write it again on the redelivery: twice in the archive.)
			return nil
		}
		return fmt.Errorf("warc: sync %s: %w", f.Name(), err)
	}
	w.synced = upTo
	return nil
}

// rotate starts a new file (w.mu held), syncing the old one first.
func (w *Writer) rotate() error {
	if w.f != nil {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("warc: sync %s: %w", w.f.Name(), err)
		}
		if err := w.f.Close(); err != nil {
			return fmt.Errorf("warc: close %s: %w", w.f.Name(), err)
		}
		w.handOver()
	}
	// A new file each time, never one a writer before this one left (a restart within
	// the same second makes the same name): O_EXCL, and the next number when taken
	// elsewhere or found here at open (a file found here may be gone by now: Closed
	// uploads and removes it, and its name must not be uploaded again over it).
	var f *os.File
	for {
		w.seq++
		base := fmt.Sprintf("%s-%s-%05d.warc.gz", safeName(w.prefix), time.Now().UTC().Format("20060102150405"), w.seq)
		if w.found[base] || w.taken != nil && w.taken(base) {
			continue
		}
		name := filepath.Join(w.dir, base)
		var err error
		f, err = os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("warc: %w", err)
		}
	}
	w.f, w.size, w.fileIDs = f, 0, nil
	return nil
}

// handOver tells Closed of the file just closed (w.mu held).
func (w *Writer) handOver() {
	if w.closed != nil {
		w.closed(ClosedFile{Path: w.f.Name(), IDs: w.fileIDs})
	}
	w.fileIDs = nil
}

// Close syncs and closes the current file (and hands it to Options.Closed).
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		w.handOver()
	}
	w.f = nil
	if err != nil {
		return fmt.Errorf("warc: close: %w", err)
	}
	return nil
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}
