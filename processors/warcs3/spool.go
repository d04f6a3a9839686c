package warcs3

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/processors/warc"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// Spool uploads the files a warc.Writer closes: pass Spool.Closed as
// warc.Options.Closed, run Run while the writer writes, and Drain once it is closed.
type Spool struct {
	store *Store
	log   *zap.Logger

	mu    sync.Mutex
	queue []warc.ClosedFile
	wake  chan struct{}
}

// NewSpool returns a Spool that uploads to store. A nil logger logs nothing.
func NewSpool(store *Store, log *zap.Logger) *Spool {
	if log == nil {
		log = zap.NewNop()
	}
	return &Spool{store: store, log: log, wake: make(chan struct{}, 1)}
}

// Closed queues a file for upload. It never blocks (a warc.Options.Closed).
func (s *Spool) Closed(f warc.ClosedFile) {
	s.mu.Lock()
	s.queue = append(s.queue, f)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Pending returns the number of files waiting for their upload.
func (s *Spool) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Run uploads queued files until ctx ends, retrying a failed upload with a backoff
// (up to 30 s) so that an unreachable bucket is waited out: the files stay in the spool.
func (s *Spool) Run(ctx context.Context) {
	failures := 0
	for {
		err := s.uploadAll(ctx)
		if err == nil {
			failures = 0
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		failures++
		backoff := loop.Backoff(time.Second, 30*time.Second, failures)
		s.log.Warn("archive upload failed; retrying", zap.Duration("in", backoff), zap.Int("files", s.Pending()), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// Drain uploads every queued file, once the writer is closed; it returns the first
// error (the files it could not upload stay in the spool for the next start).
func (s *Spool) Drain(ctx context.Context) error {
	if err := s.uploadAll(ctx); err != nil {
		return fmt.Errorf("%w (%d files left in the spool; a restarted archiver uploads them)", err, s.Pending())
	}
	return nil
}

// uploadAll uploads the queue in order, leaving a file that failed at its head.
func (s *Spool) uploadAll(ctx context.Context) error {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.mu.Unlock()
			return nil
		}
		f := s.queue[0]
		s.mu.Unlock()
		switch err := s.store.Upload(ctx, f); {
		case errors.Is(err, fs.ErrNotExist):
			// Removed from the spool by someone else: nothing left to upload (retrying
			// would hold every file behind it).
			s.log.Error("archive file vanished from the spool before its upload", zap.String("file", f.Path), zap.Int("pages", len(f.IDs)))
		case err != nil:
			return err
		default:
			s.log.Info("archive file uploaded", zap.String("key", s.store.Key(filepath.Base(f.Path))), zap.Int("pages", len(f.IDs)))
		}
		s.mu.Lock()
		s.queue = s.queue[1:]
		s.mu.Unlock()
	}
}

// Lock takes the spool directory for this process (created if missing): a second
// archiver on the same spool would upload and remove the file the first is writing.
// The lock goes with the process (kill -9 included). unlock releases it.
func Lock(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("warcs3: spool: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("warcs3: spool: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("warcs3: spool %s is in use by another archiver (give each its own --spool): %w", dir, err)
	}
	return func() { f.Close() }, nil
}
