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

	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/processors/warc"
	"github.com/streamcrawl/streamcrawl/spiders"
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

func replayFile(ctx context.Context, src WARCSource, parse *parser, sink processors.Sink, res *WARCReplayResult, log *zap.Logger) error {
	name := src.Name
	f, err := src.Open(ctx)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := warc.NewReader(f)
	if err != nil {
		return fmt.Errorf("handlers: %s: %w", name, err)
	}
	requests := map[string]*spiders.Request{} // response record ID -> its request
	for ctx.Err() == nil {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("handlers: %s: %w", name, err)
		}
		switch rec.Type() {
		case warc.TypeRequest:
			if js := rec.Header[warc.FieldRequest]; js != "" {
				if req, err := spiders.UnmarshalRequest([]byte(js)); err == nil {
					requests[rec.Header[warc.FieldConcurrentTo]] = req
				}
			}
		case warc.TypeResponse:
			page, err := pageOf(rec, requests[rec.ID()], parse.maxBody())
			delete(requests, rec.ID())
			if err != nil {
				res.Failed++
				log.Warn("archived page unreadable; skipped", zap.String("record", rec.ID()), zap.Error(err))
				continue
			}
			out, err := parse.run(ctx, page)
			if err != nil {
				res.Failed++
				log.Warn("callback failed on an archived page", zap.String("url", short(page.URL)), zap.Error(err))
				continue
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
		}
	}
	return ctx.Err()
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
		return nil, fmt.Errorf("%w: %s", spiders.ErrBodyTooLarge, uri)
	}
	date, _ := time.Parse(time.RFC3339Nano, rec.Header[warc.FieldDate])
	hdr := hres.Header
	hdr.Del("Content-Length")
	return &spiders.Response{Request: req, URL: uri, Status: hres.StatusCode, Headers: hdr, Body: body,
		FetchedAt: date, RenderedBy: rec.Header[warc.FieldRenderedBy]}, nil
}
