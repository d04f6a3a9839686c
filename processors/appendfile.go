package processors

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// appendFile is the core of the file sinks (JSONL, CSV): an append-only file of records
// indexed by item key, written by one goroutine in group commits (the requests queued
// at once share one write and one fsync), cut back to its last complete record at open
// and after a failed write. R is the sink's write request; the sink encodes records,
// the core keeps the file, the key index and the queue.
type appendFile[R any] struct {
	path    string
	f       *os.File
	newFile bool // the directory entry still needs an fsync
	seed    maphash.Seed
	keys    *keyWindow // 64-bit hashes of the last keys written (keyWindowSize); writer only

	reqs chan R
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// openAppendFile opens (or creates) path for reading its records and appending; it
// remembers the last window keys written.
func openAppendFile[R any](path string, window int) (*appendFile[R], error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("processors: open %s: %w", path, err)
	}
	return &appendFile[R]{path: path, f: f, seed: maphash.MakeSeed(), keys: newKeyWindow(window),
		reqs: make(chan R, 1024), stop: make(chan struct{})}, nil
}

// index records key as written.
func (a *appendFile[R]) index(key string) { a.keys.add(a.hash(key)) }

func (a *appendFile[R]) hash(key string) uint64 { return maphash.String(a.seed, key) }

// batchKeys tells, for the requests of one batch, which keys are known: among the last
// written to the file (see keyWindowSize) or added to the batch already. The writer adds each key it writes, then commits them
// once the batch is durable.
type batchKeys[R any] struct {
	a     *appendFile[R]
	seen  map[uint64]bool
	added []uint64
}

func (a *appendFile[R]) newBatch() *batchKeys[R] {
	return &batchKeys[R]{a: a, seen: map[uint64]bool{}}
}

// known reports whether key is among the file's last keys or in the batch.
func (b *batchKeys[R]) known(key string) bool {
	h := b.a.hash(key)
	return b.a.keys.has(h) || b.seen[h]
}

// add counts key in the batch.
func (b *batchKeys[R]) add(key string) {
	h := b.a.hash(key)
	b.seen[h] = true
	b.added = append(b.added, h)
}

// commit indexes the batch's new keys (once its bytes are durable).
func (b *batchKeys[R]) commit() {
	for _, h := range b.added {
		b.a.keys.add(h)
	}
}

// cut truncates the file to its good part (good bytes: the records read whole at open)
// and positions it there for appending; an empty file counts as new (its directory is
// fsynced with its first write).
func (a *appendFile[R]) cut(good int64) error {
	if err := a.f.Truncate(good); err != nil {
		return fmt.Errorf("processors: truncate torn record of %s: %w", a.path, err)
	}
	if _, err := a.f.Seek(good, io.SeekStart); err != nil {
		return fmt.Errorf("processors: %s: %w", a.path, err)
	}
	a.newFile = good == 0
	return nil
}

// append writes b at the end of the file and fsyncs it (and, for a new file, its
// directory); on failure it cuts the file back to where it was, so that no partial
// record stays behind.
func (a *appendFile[R]) append(b []byte) error {
	_, err := a.f.Write(b)
	if err == nil {
		err = a.f.Sync()
	}
	if err == nil && a.newFile {
		if err = syncDir(a.path); err == nil {
			a.newFile = false
		}
	}
	if err != nil {
		if off, serr := a.f.Seek(-int64(len(b)), io.SeekCurrent); serr == nil {
			_ = a.f.Truncate(off)
		}
		return fmt.Errorf("processors: write %s: %w", a.path, err)
	}
	return nil
}

// start runs the writer: write gets each batch of queued requests (group commit).
func (a *appendFile[R]) start(write func(batch []R)) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		batchLoop(a.reqs, a.stop, write)
	}()
}

// submit queues r for the writer; done is where the writer answers it.
func (a *appendFile[R]) submit(ctx context.Context, r R, done <-chan error, kind string) error {
	select {
	case a.reqs <- r:
	case <-a.stop:
		return fmt.Errorf("processors: %s sink closed", kind)
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-done
}

// close stops the writer, answers with an error (through reject) the requests that
// raced with it, and closes the file.
func (a *appendFile[R]) close(kind string, reject func(r R, err error)) error {
	a.once.Do(func() { close(a.stop) })
	a.wg.Wait()
	closed := errors.New("processors: " + kind + " sink closed")
	for {
		select {
		case r := <-a.reqs:
			reject(r, closed)
			continue
		default:
		}
		break
	}
	if err := a.f.Close(); err != nil {
		return fmt.Errorf("processors: close %s: %w", a.path, err)
	}
	return nil
}

// syncDir fsyncs the directory holding path, so a newly created file survives a crash.
func syncDir(path string) error {
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
