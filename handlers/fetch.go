package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// Fetch is the fetch stage: it turns a request message into a response message.
//
// 2xx (and other non-error) responses go on to the parse stage with their body (decoded,
// cut at the spider's max_body_size and flagged truncated). 408, 429 and 5xx answers and
// network errors are retried by the subscriber with backoff and end as dead letters after
// the delivery limit. Other 4xx answers are final: counted (status_404, ...) and dropped.
// A request that can never succeed (malformed message, too many redirects) goes to dead
// letters at once.
type Fetch struct {
	client   *http.Client
	settings spiders.Settings
	counters *streams.Counters
	log      *zap.Logger
}

// NewFetch returns the fetch stage for spider settings s. counters and log may be nil.
func NewFetch(s spiders.Settings, counters *streams.Counters, log *zap.Logger) (*Fetch, error) {
	s.SetDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Fetch{client: newHTTPClient(s), settings: s, counters: counters, log: log}, nil
}

// Handle fetches the request in msg and returns the response message.
func (f *Fetch) Handle(msg *message.Message) ([]*message.Message, error) {
	req, err := spiders.UnmarshalRequest(msg.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	res, err := f.Fetch(msg.Context(), req)
	if err != nil {
		f.count("fetch_errors", 1)
		return nil, err
	}
	if res == nil {
		return nil, nil // final HTTP error: counted, nothing to parse
	}
	payload, err := spiders.MarshalResponse(res)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	return []*message.Message{message.NewMessage(watermill.NewUUID(), payload)}, nil
}

// Fetch performs one request. It returns (nil, nil) for a final HTTP error status, an
// error wrapping streams.ErrPoison when retrying cannot help, and a plain error for a
// failure worth retrying.
func (f *Fetch) Fetch(ctx context.Context, req *spiders.Request) (*spiders.Response, error) {
	var body *bytes.Reader
	if len(req.Body) > 0 {
		body = bytes.NewReader(req.Body)
	}
	hreq, err := http.NewRequestWithContext(ctx, req.HTTPMethod(), req.URL, nilIfEmpty(body))
	if err != nil {
		return nil, fmt.Errorf("%w: handlers: build request for %s: %w", streams.ErrPoison, req.URL, err)
	}
	hreq.Header.Set("User-Agent", f.settings.UserAgent)
	hreq.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	hreq.Header.Set("Accept-Encoding", acceptEncoding)
	for k, v := range f.settings.Headers {
		hreq.Header.Set(k, v)
	}
	for k, v := range req.Headers {
		hreq.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := f.client.Do(hreq)
	if err != nil {
		if errors.Is(err, errFinal) {
			return nil, fmt.Errorf("%w: handlers: fetch %s: %w", streams.ErrPoison, req.URL, err)
		}
		return nil, fmt.Errorf("handlers: fetch %s: %w", req.URL, err)
	}
	defer resp.Body.Close()
	f.count("status_"+strconv.Itoa(resp.StatusCode), 1)
	switch code := resp.StatusCode; {
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return nil, fmt.Errorf("handlers: fetch %s: HTTP %d", req.URL, code)
	case code >= 400:
		f.count("http_errors_final", 1)
		return nil, nil
	}
	data, truncated, err := readBody(resp, f.settings.MaxBodySize)
	if err != nil {
		if errors.Is(err, errFinal) {
			return nil, fmt.Errorf("%w: handlers: %s: %w", streams.ErrPoison, req.URL, err)
		}
		return nil, fmt.Errorf("handlers: fetch %s: %w", req.URL, err)
	}
	f.count("pages_fetched", 1)
	f.count("bytes_fetched", int64(len(data)))
	if truncated {
		f.count("bodies_truncated", 1)
		f.log.Info("body cut at max_body_size", zap.String("url", req.URL), zap.Int64("max_body_size", f.settings.MaxBodySize))
	}
	hdr := resp.Header.Clone()
	hdr.Del("Content-Encoding") // the body we pass on is decoded
	hdr.Del("Content-Length")
	f.log.Debug("fetched", zap.String("url", req.URL), zap.Int("status", resp.StatusCode),
		zap.Int("bytes", len(data)), zap.Duration("took", time.Since(start)))
	return &spiders.Response{Request: req, URL: resp.Request.URL.String(), Status: resp.StatusCode,
		Headers: hdr, Body: data, Truncated: truncated, FetchedAt: time.Now().UTC()}, nil
}

func (f *Fetch) count(field string, n int64) {
	if f.counters != nil {
		f.counters.Add(field, n)
	}
}

// nilIfEmpty avoids handing http.NewRequest a typed nil reader.
func nilIfEmpty(r *bytes.Reader) interface {
	Read([]byte) (int, error)
} {
	if r == nil {
		return nil
	}
	return r
}
