package handlers

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// Parse is the parse stage: it runs the spider callback named on a response's request,
// sends the new requests through the frontier (dedup + enqueue) and publishes the items.
// It returns only after both are in Redis.
type Parse struct {
	spider    *spiders.Spider
	scope     *spiders.Scope
	frontier  *streams.Frontier
	publisher *streams.Publisher
	items     string
	counters  *streams.Counters
	log       *zap.Logger
}

// ParseConfig configures the parse stage.
type ParseConfig struct {
	Spider    *spiders.Spider
	Frontier  *streams.Frontier
	Publisher *streams.Publisher
	// ItemsStream is where items go.
	ItemsStream string
	// Counters and Logger may be nil.
	Counters *streams.Counters
	Logger   *zap.Logger
}

// NewParse returns the parse stage.
func NewParse(cfg ParseConfig) (*Parse, error) {
	if cfg.Spider == nil || cfg.Frontier == nil || cfg.Publisher == nil || cfg.ItemsStream == "" {
		return nil, errors.New("handlers: parse needs a spider, a frontier, a publisher and an items stream")
	}
	scope, err := cfg.Spider.Scope()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	return &Parse{spider: cfg.Spider, scope: scope, frontier: cfg.Frontier, publisher: cfg.Publisher,
		items: cfg.ItemsStream, counters: cfg.Counters, log: log}, nil
}

// Handle parses the response in msg.
func (p *Parse) Handle(msg *message.Message) error {
	res, err := spiders.UnmarshalResponse(msg.Payload)
	if err != nil {
		return fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	ctx := msg.Context()
	out, err := p.run(ctx, res)
	if err != nil {
		return err
	}
	// Items and requests go out at the same time; the page is acked after both are in.
	itemsErr := make(chan error, 1)
	go func() { itemsErr <- p.publishItems(ctx, res, out.Items) }()
	err = p.enqueue(ctx, res, out.Requests)
	if ierr := <-itemsErr; err == nil {
		err = ierr
	}
	if err != nil {
		return err
	}
	p.count("pages_parsed", 1)
	return nil
}

// run calls the callback, turning a panic into an error that carries the panic message.
func (p *Parse) run(ctx context.Context, res *spiders.Response) (out *spiders.Output, err error) {
	cb, err := p.spider.Callback(res.Request.CallbackName())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("callback panicked", zap.String("url", res.URL), zap.Any("panic", r),
				zap.ByteString("stack", debug.Stack()))
			out, err = nil, fmt.Errorf("handlers: callback %q panicked on %s: %v", res.Request.CallbackName(), res.URL, r)
		}
	}()
	out = &spiders.Output{}
	if err := cb(ctx, res, out); err != nil {
		return nil, fmt.Errorf("handlers: callback %q on %s: %w", res.Request.CallbackName(), res.URL, err)
	}
	return out, nil
}

// enqueue filters the requests by scope, fingerprints them and queues the new ones.
func (p *Parse) enqueue(ctx context.Context, res *spiders.Response, reqs []*spiders.Request) error {
	if len(reqs) == 0 {
		return nil
	}
	cands := make([]streams.Candidate, 0, len(reqs))
	local := make(map[[spiders.FingerprintSize]byte]bool, len(reqs))
	for _, r := range reqs {
		if ok, reason := p.scope.Allows(r); !ok {
			p.count("dropped_"+reason, 1)
			continue
		}
		var fp []byte
		if !r.DontFilter {
			sum, err := r.Fingerprint()
			if err != nil {
				p.count("dropped_invalid", 1)
				continue
			}
			if local[sum] {
				continue // the same link twice on one page
			}
			local[sum] = true
			fp = sum[:]
		}
		if len(r.Meta) == 0 && res.Request != nil && len(res.Request.Meta) > 0 {
			r.Meta = res.Request.Meta
		}
		payload, err := spiders.MarshalRequest(r)
		if err != nil {
			p.count("dropped_invalid", 1)
			continue
		}
		cands = append(cands, streams.Candidate{Fingerprint: fp, Payload: payload})
	}
	_, err := p.frontier.Enqueue(ctx, cands)
	return err
}

// publishItems stamps the items with the page and publishes them.
func (p *Parse) publishItems(ctx context.Context, res *spiders.Response, items []spiders.Item) error {
	if len(items) == 0 {
		return nil
	}
	msgs := make([]*message.Message, 0, len(items))
	for i := range items {
		it := &items[i]
		it.URL = res.URL
		it.CrawledAt = res.FetchedAt
		if it.Meta == nil && res.Request != nil {
			it.Meta = res.Request.Meta
		}
		payload, err := spiders.MarshalItem(it)
		if err != nil {
			return fmt.Errorf("%w: handlers: item from %s: %w", streams.ErrPoison, res.URL, err)
		}
		msgs = append(msgs, message.NewMessage(watermill.NewUUID(), payload))
	}
	if err := p.publisher.PublishContext(ctx, p.items, msgs...); err != nil {
		return fmt.Errorf("handlers: publish %d items from %s: %w", len(msgs), res.URL, err)
	}
	p.count("items_scraped", int64(len(msgs)))
	return nil
}

func (p *Parse) count(field string, n int64) {
	if p.counters != nil {
		p.counters.Add(field, n)
	}
}
