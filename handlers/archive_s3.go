package handlers

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/processors/warc"
	"github.com/streamcrawl/streamcrawl/processors/warcs3"
)

// archiveUploadTimeout bounds the upload of the files left at shutdown.
const archiveUploadTimeout = 10 * time.Minute

// archiveWriter is the WARC writer of an archiver and, with a bucket, its uploader.
type archiveWriter struct {
	*warc.Writer
	spool  *warcs3.Spool // nil: local files only
	unlock func()
}

// openArchiveWriter opens cfg.Dir for writing. With cfg.Upload, Dir is a spool: it is
// locked for this process, the files left there are queued for upload first, and the
// response record IDs and file names the bucket holds are known to the writer (no page
// written twice, no file name reused).
func openArchiveWriter(ctx context.Context, cfg ArchiveConfig, prefix string, log *zap.Logger) (*archiveWriter, error) {
	opts := warc.Options{MaxFileSize: cfg.MaxFileSize}
	aw := &archiveWriter{unlock: func() {}}
	if cfg.Upload != nil {
		unlock, err := warcs3.Lock(cfg.Dir)
		if err != nil {
			return nil, err
		}
		ids, names, err := cfg.Upload.Index(ctx)
		if err != nil {
			unlock()
			return nil, err
		}
		log.Info("archive bucket index read", zap.Int("pages", len(ids)), zap.Int("files", len(names)))
		aw.spool, aw.unlock = warcs3.NewSpool(cfg.Upload, log), unlock
		opts.Closed, opts.Known = aw.spool.Closed, ids
		opts.Taken = func(name string) bool { return names[name] }
	}
	w, err := warc.OpenWith(cfg.Dir, prefix, opts)
	if err != nil {
		aw.unlock()
		return nil, err
	}
	aw.Writer = w
	return aw, nil
}

// Run uploads closed files until ctx ends (no-op without a bucket), then returns nil.
func (aw *archiveWriter) Run(ctx context.Context) error {
	if aw.spool != nil {
		aw.spool.Run(ctx)
	}
	return nil
}

// Close closes the writer and uploads what is left in the spool, within
// archiveUploadTimeout even if ctx is done.
func (aw *archiveWriter) Close(ctx context.Context) error {
	defer aw.unlock()
	err := aw.Writer.Close()
	if aw.spool == nil {
		return err
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), archiveUploadTimeout)
	defer cancel()
	if uerr := aw.spool.Drain(uctx); err == nil {
		err = uerr
	}
	return err
}
