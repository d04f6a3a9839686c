package handlers

import (
	"context"
	"fmt"

	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/streamcrawl/streamcrawl/handlers/fetch"
	"github.com/streamcrawl/streamcrawl/streams"
)

// addStage builds one stage of the run: its subscriber, its handlers on the router
// (one per partition) and its background components.
func (r *run) addStage(ctx context.Context, stage string) error {
	scfg := r.subscriberConfig(stage)
	switch stage {
	case streams.StageFetch:
		return r.fetchStage(ctx, scfg)
	case streams.StageParse:
		return r.parseStage(ctx, scfg)
	case streams.StageStore:
		return r.storeStage(scfg)
	}
	return fmt.Errorf("handlers: unknown stage %q (want fetch, parse or store)", stage)
}

// subscriberConfig is the run's subscriber settings for stage's group.
func (r *run) subscriberConfig(stage string) streams.SubscriberConfig {
	cfg := r.cfg
	scfg := cfg.Subscriber
	scfg.Client, scfg.Group, scfg.Consumer, scfg.Logger, scfg.Outage, scfg.CheckState =
		cfg.Client, stage, cfg.Consumer, r.log, r.outage, r.state.Check
	if cfg.BeforeAck != nil {
		hook := cfg.BeforeAck
		scfg.BeforeAck = func(m *message.Message) { hook(stage, m) }
	}
	if cfg.Metrics != nil {
		scfg.OnEvent = cfg.Metrics.SubscriberEvent
	}
	return scfg
}

// fetchStage reads requests, fetches them and publishes responses. Beside it run the
// frontier (requests of the hosts that may start one into the requests stream, retries
// back to their hosts' queues when due), the seed poller (seeds pushed at runtime) and,
// with a MaxBacklog, the backlog watch that pauses fetching while the parse stage is
// behind.
func (r *run) fetchStage(ctx context.Context, scfg streams.SubscriberConfig) error {
	cfg, layout, log := r.cfg, r.layout, r.log
	// The fetch stage's frontier: its Run hands requests out and moves due retries back,
	// the fetcher finishes its turns at hosts there, the seed poller queues through it.
	fr, err := newFrontier(ctx, cfg.Client, cfg.Spider, frontierUse{seeding: true, countUnread: cfg.CountUnread, log: log}, log)
	if err != nil {
		return err
	}
	r.closers = append(r.closers, fr.Close)
	r.forget = append(r.forget, fr.Forget, func() { forgetResponseDicts(ctx, cfg.Client, layout.Global, log) })
	scope, err := cfg.Spider.Scope()
	if err != nil {
		return err
	}
	seeds := &seedPoller{spider: cfg.Spider, scope: scope, frontier: fr, counters: r.counters, log: log}
	r.background = append(r.background, fr, seeds)
	hostStats := streams.NewHostStats(ctx, cfg.Client, layout)
	r.closers = append(r.closers, hostStats.Close)
	pool, err := r.browsers(ctx)
	if err != nil {
		return err
	}
	f, err := fetch.New(fetch.Config{Settings: cfg.Spider.Settings, Scope: scope, FollowFilter: cfg.Spider.FollowFilter, Frontier: fr,
		Client: cfg.Client, Layout: layout, RetryBase: cfg.RetryBase, RobotsRetry: cfg.RobotsRetry, Counters: r.counters,
		Metrics: cfg.Metrics, HostStats: hostStats, Logger: log,
		Browsers: pool, Render: cfg.Spider.Render, Page: cfg.Spider.Page, Extract: extractor(cfg.Spider), SharedHosts: cfg.SharedHosts})
	if err != nil {
		return err
	}
	r.closers = append(r.closers, f.Close)
	if cfg.Spider.Login != nil {
		if err := f.Login(ctx, cfg.Spider.Login); err != nil {
			return err
		}
	}
	h := &fetchHandler{f: f, frontier: fr, counters: r.counters, retryLog: sampled(log, 3), spider: cfg.Spider, handoff: r.handoff,
		encode: responseEncoder(cfg.Spider.Settings, cfg.Retain[streams.StageParse].Keeps(), cfg.Client, layout, r.counters, log)}
	if h.revisits, err = newRevisitor(cfg.Spider, fr, layout, r.counters); err != nil {
		return err
	}
	scfg.MaxInFlight = cfg.Spider.Settings.Concurrency
	if cfg.FetchConcurrency > 0 && cfg.FetchConcurrency < scfg.MaxInFlight {
		scfg.MaxInFlight = cfg.FetchConcurrency
	}
	if cfg.MaxBacklog > 0 {
		var responses []string
		for _, k := range layout.Parts {
			responses = append(responses, k.Responses)
		}
		backlog := &streams.Backlog{Client: cfg.Client, Streams: responses, Group: streams.StageParse, Max: cfg.MaxBacklog,
			CountUnread: cfg.CountUnread}
		scfg.Gate = backlog.Under
		r.background = append(r.background, backlog)
	}
	sub, err := newStageSubscriber(scfg)
	if err != nil {
		return err
	}
	for i, k := range layout.Parts {
		r.router.AddHandler(handlerName(streams.StageFetch, i, len(layout.Parts)), k.Requests, sub, k.Responses, r.pub, h.handle)
	}
	return nil
}

// parseStage reads responses, runs the spider's callbacks and sends items to the
// items stream and new requests through the frontier.
func (r *run) parseStage(ctx context.Context, scfg streams.SubscriberConfig) error {
	cfg := r.cfg
	if r.fr == nil {
		fr, err := newFrontier(ctx, cfg.Client, cfg.Spider, frontierUse{countUnread: cfg.CountUnread}, r.log)
		if err != nil {
			return err
		}
		r.fr = fr
		r.forget = append(r.forget, fr.Forget)
	}
	r.forget = append(r.forget, dictMissing.Clear)
	p, err := newParser(parserConfig{Spider: cfg.Spider, Frontier: r.fr, Client: cfg.Client, Layout: r.layout, Counters: r.counters, Logger: r.log,
		Handoff: r.handoff})
	if err != nil {
		return err
	}
	if p.revisits, err = newRevisitor(cfg.Spider, r.fr, r.layout, r.counters); err != nil {
		return err
	}
	return r.consumeParts(streams.StageParse, scfg, cfg.ParseConcurrency, func(k streams.Keys) string { return k.Responses }, p.handleIn)
}

// storeStage reads items, runs the processors and writes them to the sink.
func (r *run) storeStage(scfg streams.SubscriberConfig) error {
	cfg := r.cfg
	s, err := newStorer(cfg.Sink, cfg.Processors, r.counters)
	if err != nil {
		return err
	}
	return r.consumeParts(streams.StageStore, scfg, cfg.StoreConcurrency, func(k streams.Keys) string { return k.Items },
		func(int) message.NoPublishHandlerFunc { return s.handle })
}

// consumeParts adds a handler of stage per partition, reading the partition's stream
// with one subscriber that holds maxInFlight messages at once; handler gives the
// partition's handler.
func (r *run) consumeParts(stage string, scfg streams.SubscriberConfig, maxInFlight int, stream func(streams.Keys) string,
	handler func(part int) message.NoPublishHandlerFunc) error {
	scfg.MaxInFlight = maxInFlight
	sub, err := newStageSubscriber(scfg)
	if err != nil {
		return err
	}
	for i, k := range r.layout.Parts {
		r.router.AddConsumerHandler(handlerName(stage, i, len(r.layout.Parts)), stream(k), sub, handler(i))
	}
	return nil
}
