package handlers

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/fetch"
	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// fetchHandler is the fetch stage's handler: a request message in, fetch.Fetcher.Do,
// a response message out. It does what the fetcher's result says: the response goes on
// to the parse stage (encoded for the responses stream); a retry goes to the crawl's
// delayed set; a redirect's next hop goes through the frontier; a dropped request is
// acked with nothing out; a dead one becomes a dead letter with its error. A retry or a
// hop is in Redis before the input is acked.
type fetchHandler struct {
	f        *fetch.Fetcher
	frontier *frontier.Frontier
	encode   func(context.Context, *spiders.Response) ([]byte, error)
	counters *streams.Counters
	retryLog *zap.Logger     // INFO, sampled: a few lines per second at most
	revisits *revisitor      // nil: the spider has no revisit rules
	spider   *spiders.Spider // keys the redirect hops it follows (RequestFingerprint)
	handoff  *handoff        // nil: no parse stage in this process
}

// handle fetches the request in msg and returns the response message.
func (h *fetchHandler) handle(msg *message.Message) ([]*message.Message, error) {
	req, err := spiders.UnmarshalRequest(msg.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	ctx := msg.Context()
	n := msg.Metadata.Get(streams.MetaDeliveries)
	res, err := h.f.Do(ctx, req, fetch.Delivery{ID: msg.Metadata.Get(streams.MetaStreamID), Redelivered: n != "" && n != "1",
		Owner: streams.Holder(ctx)})
	defer res.Release() // the body stays in the budget until it is encoded
	if err == nil {
		// A fetcher that slept through the fetch (see streams.Held) leaves what it got to
		// the fetcher that took the request over: no second response, retry or dead letter.
		err = streams.Held(ctx)
	}
	if err != nil {
		return nil, err
	}
	// The URL's next revisit, when a rule matches it: scheduled here for a 304 or a bad
	// answer (a dead letter's included), by the parse stage for a 200.
	if err := h.revisits.fetched(ctx, req, res, msg.UUID); err != nil {
		return nil, err
	}
	switch res.Outcome {
	case fetch.Retry:
		return nil, h.retry(ctx, res.Request, res.At)
	case fetch.Dead:
		return nil, res.Err
	case fetch.Drop:
		return nil, nil
	case fetch.Redirect:
		return nil, h.follow(ctx, res.Request)
	}
	payload, err := h.encode(ctx, res.Response)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	out := message.NewMessage(watermill.NewUUID(), payload)
	if enc := wire.Encoding(payload); enc != "" {
		out.Metadata.Set("content_encoding", enc)
	}
	if h.handoff != nil {
		// For this process's parse stage, under the UUID the entry carries: its own copy
		// of the body (the fetched buffer goes back to the pool on return).
		if _, evicted := h.handoff.put(out.UUID, wire.Detach(res.Response)); evicted > 0 && h.counters != nil {
			h.counters.Add("responses_handoff_evicted", int64(evicted))
		}
	}
	return []*message.Message{out}, nil
}

// follow queues a redirect's next hop through the frontier, as the parse stage queues
// a link: deduplicated (a hop to a URL seen before is not fetched again), in its host's
// queue, so that it takes that host's turn. The caller acks the input only once it is
// in Redis.
func (h *fetchHandler) follow(ctx context.Context, next *spiders.Request) error {
	if _, ok := next.Meta[revisitMeta]; ok {
		// A revisit's hop is a URL of its own, deduplicated as any link: the source keeps
		// its revisits, and the target its own (revisit.go).
		next.Meta = maps.Clone(next.Meta)
		delete(next.Meta, revisitMeta)
		next.DontFilter = false
	}
	c, err := candidate(h.spider, next)
	if err != nil {
		return fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	e, err := h.frontier.Emit(ctx, 0, []frontier.Candidate{c}, nil)
	if err != nil {
		return err // not in Redis: the input is not acked and comes back
	}
	countEmitted(h.counters, e)
	return nil
}

// retry puts next, a request's next attempt, in the delayed set until at. The caller
// acks the input only once the retry is in Redis.
func (h *fetchHandler) retry(ctx context.Context, next *spiders.Request, at time.Time) error {
	payload, err := spiders.MarshalRequest(next)
	if err != nil {
		return fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	if err := h.frontier.Retry(ctx, spiders.HostKey(next.URL), next.Priority, next.Depth, payload, at); err != nil {
		return err // not in Redis: the input is not acked and comes back
	}
	if h.counters != nil {
		h.counters.Add("retries_scheduled", 1)
	}
	h.retryLog.Info("retry scheduled", zap.String("url", spiders.RedactedURL(next.URL)), zap.Int("retry", next.Retries),
		zap.Duration("in", time.Until(at)), zap.String("error", next.LastError))
	return nil
}
