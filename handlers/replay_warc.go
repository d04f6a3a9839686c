package handlers

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/processors/warc"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// WARCReplayResult says what a replay from WARC files did.
type WARCReplayResult struct {
	// Pages re-parsed, and Items they gave.
	Pages, Items int64
	// Failed counts the pages whose callback failed (each logged).
	Failed int64
	// RequestsDiscarded counts the requests the pages yielded: a replay follows no
	// links.
	RequestsDiscarded int64
}

// WARCSource is one WARC file a replay reads: local (WARCFile) or an object in a bucket
// (warcs3.Store.Open).
type WARCSource struct {
	// Name names the file in errors and logs (a path, s3://bucket/key).
	Name string
	// Open opens it for reading from the start.
	Open func(ctx context.Context) (io.ReadCloser, error)
}

// WARCFile is the WARCSource of a local file.
func WARCFile(path string) WARCSource {
	return WARCSource{Name: path, Open: func(context.Context) (io.ReadCloser, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("handlers: %w", err)
		}
		return f, nil
	}}
}

// ReplayWARC re-parses the pages archived in files (by streamcrawl archive) with sp,
// fetching nothing and needing no Redis, and stores the items in sink (closed when done).
// Each page runs the callback its request named, with its meta; items carry the page's
// URL and fetch time as in the crawl.
func ReplayWARC(ctx context.Context, files []WARCSource, sp *spiders.Spider, sink processors.Sink, log *zap.Logger) (res WARCReplayResult, err error) {
	if sp == nil || sink == nil {
		return res, errors.New("handlers: a WARC replay needs a spider and a sink")
	}
	if log == nil {
		log = zap.NewNop()
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if cerr := sink.Close(cctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	s := *sp
	s.Settings.SetDefaults()
	parse := &parser{spider: &s, log: log}
	for _, src := range files {
		if err := replayFile(ctx, src, parse, sink, &res, log); err != nil {
			return res, err
		}
	}
	return res, nil
}

// warcReadTries is how many times a replay reads a WARC file whose reads fail (a
// dropped connection to the bucket) before it gives up; warcReadWait is the first wait
// between two tries (doubling, loop.Backoff).
const (
	warcReadTries = 4
	warcReadWait  = time.Second
)

// replayFile replays the pages of one WARC file. A read of the file that fails (the
// source's Read returns an error: a connection to the bucket dropped mid-object) is
// tried again from the start of the file, the records already replayed skipped, up to
// warcReadTries times; a record the WARC reader cannot parse fails the file at once.
func replayFile(ctx context.Context, src WARCSource, parse *parser, sink processors.Sink, res *WARCReplayResult, log *zap.Logger) error {
	done := 0 // records replayed so far
	for try := 1; ; try++ {
		n, err := replayRecords(ctx, src, done, parse, sink, res, log)
		done = max(done, n)
		var rerr *warcReadError
		if !errors.As(err, &rerr) || try >= warcReadTries {
			return err
		}
		wait := loop.Backoff(warcReadWait, 30*time.Second, try)
		log.Warn("WARC file read failed; reading it again", zap.String("file", src.Name),
			zap.Int("records_done", done), zap.Duration("wait", wait), zap.Error(rerr.err))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// warcReadError is a failed read of a WARC file's bytes (not a record that does not
// parse): replayFile reads the file again.
type warcReadError struct {
	name string
	err  error
}

func (e *warcReadError) Error() string { return fmt.Sprintf("handlers: read %s: %v", e.name, e.err) }
func (e *warcReadError) Unwrap() error { return e.err }

// readErrors passes reads through and keeps the first error that is not io.EOF.
type readErrors struct {
	r   io.Reader
	err error
}

func (r *readErrors) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// replayRecords reads src from its start and replays its records from record skip on
// (those before are read for their requests only). It returns the number of records
// read, and a *warcReadError when reading the source's bytes failed.
func replayRecords(ctx context.Context, src WARCSource, skip int, parse *parser, sink processors.Sink, res *WARCReplayResult, log *zap.Logger) (int, error) {
	name := src.Name
	f, err := src.Open(ctx)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	in := &readErrors{r: f}
	fail := func(n int, err error) (int, error) {
		if in.err != nil {
			return n, &warcReadError{name: name, err: in.err}
		}
		return n, fmt.Errorf("handlers: %s: %w", name, err)
	}
	r, err := warc.NewReader(in)
	if err != nil {
		return fail(0, err)
	}
	requests := map[string]*spiders.Request{} // response record ID -> its request
	for n := 0; ctx.Err() == nil; n++ {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) && in.err == nil { // the end, not a read that failed
			return n, nil
		}
		if err != nil {
			return fail(n, err)
		}
		switch rec.Type() {
		case warc.TypeRequest:
			if js := rec.Header[warc.FieldRequest]; js != "" {
				if req, err := spiders.UnmarshalRequest([]byte(js)); err == nil {
					requests[rec.Header[warc.FieldConcurrentTo]] = req
				}
			}
		case warc.TypeResponse:
			req := requests[rec.ID()]
			delete(requests, rec.ID())
			if n < skip {
				continue // replayed by an earlier read of the file
			}
			if err := replayPage(ctx, rec, req, parse, sink, res, log); err != nil {
				return n, err
			}
		}
	}
	return 0, ctx.Err()
}

// replayPage re-parses the page of one response record and stores its items.
func replayPage(ctx context.Context, rec *warc.Record, req *spiders.Request, parse *parser, sink processors.Sink, res *WARCReplayResult, log *zap.Logger) error {
	page, err := pageOf(rec, req, parse.maxBody())
	if err != nil {
		res.Failed++
		log.Warn("archived page unreadable; skipped", zap.String("record", rec.ID()), zap.Error(err))
		return nil
	}
	out, err := parse.run(ctx, page)
	if err != nil {
		res.Failed++
		log.Warn("callback failed on an archived page", zap.String("url", short(page.URL)), zap.Error(err))
		return nil
	}
	res.Pages++
	res.RequestsDiscarded += int64(len(out.Requests))
	for i := range out.Items {
		stamp(&out.Items[i], page)
		if _, err := sink.Store(ctx, &out.Items[i]); err != nil {
			return err
		}
		res.Items++
	}
	return nil
}

// pageOf rebuilds the response a response record holds.
func pageOf(rec *warc.Record, req *spiders.Request, maxBody int64) (*spiders.Response, error) {
	uri := rec.Header[warc.FieldTargetURI]
	if req == nil {
		var err error
		if req, err = spiders.NewRequest(uri, spiders.DefaultCallback); err != nil {
			return nil, err
		}
	}
	hres, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(rec.Block)), nil)
	if err != nil {
		return nil, fmt.Errorf("handlers: http response of %s: %w", uri, err)
	}
	body, err := io.ReadAll(io.LimitReader(hres.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("handlers: body of %s: %w", uri, err)
	}
	if int64(len(body)) > maxBody {
		return nil, fmt.Errorf("%w: %s", wire.ErrBodyTooLarge, uri)
	}
	date, _ := time.Parse(time.RFC3339Nano, rec.Header[warc.FieldDate])
	hdr := hres.Header
	hdr.Del("Content-Length")
	return &spiders.Response{Request: req, URL: uri, Status: hres.StatusCode, Headers: hdr, Body: body,
		FetchedAt: date, RenderedBy: rec.Header[warc.FieldRenderedBy]}, nil
}
