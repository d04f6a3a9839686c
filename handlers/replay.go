package handlers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// ReplayConfig re-runs the parse or store stage over retained entries.
type ReplayConfig struct {
	Client redis.UniversalClient
	// Crawl names the crawl; Spider (required for parse) may be a fixed version of the
	// crawl's spider.
	Crawl  string
	Spider *spiders.Spider
	// Stage is streams.StageParse (re-parse stored responses, fetching nothing) or
	// streams.StageStore (re-deliver stored items).
	Stage string
	// From and To bound the entries (inclusive), as streams.ParsePosition reads them;
	// To "" means the stream's newest entry when the replay starts.
	From, To string
	// Sink receives the items. For parse it may be nil: the items then go to the items
	// stream, tagged with the replay group in their metadata (sc_replay), for the store
	// group and post-processors. Replay closes it.
	Sink processors.Sink
	// Group is the consumer group; default replay-<stage>-<unix ms>. An existing group is
	// moved (XGROUP SETID).
	Group      string
	Consumer   string
	Subscriber streams.SubscriberConfig
	Logger     *zap.Logger
}

// ReplayResult says what a replay did.
type ReplayResult struct {
	Group             string
	Entries, Items    int64
	Skipped           int64 // entries after To
	RequestsDiscarded int64 // a re-parse follows no links
}

// MetaReplay tags replayed items on the items stream with the replay's group.
const MetaReplay = "sc_replay"

// Replay runs the replay until it has handled every entry up to To.
func Replay(ctx context.Context, cfg ReplayConfig) (res ReplayResult, err error) {
	layout, err := frontier.ReadLayout(ctx, cfg.Client, cfg.Crawl)
	if err != nil {
		return res, err
	}
	// Every partition's stream is replayed, each up to its own last entry; a replayed
	// page's items go to its partition's items stream.
	var streamsIn []string
	itemsOf := map[string]string{}
	switch cfg.Stage {
	case streams.StageParse:
		for _, k := range layout.Parts() {
			streamsIn = append(streamsIn, k.Responses())
			itemsOf[k.Responses()] = k.Items()
		}
		if cfg.Spider == nil {
			return res, errors.New("handlers: a parse replay needs the spider")
		}
	case streams.StageStore:
		for _, k := range layout.Parts() {
			streamsIn = append(streamsIn, k.Items())
		}
		if cfg.Sink == nil {
			return res, errors.New("handlers: a store replay needs a sink (--out)")
		}
	default:
		return res, fmt.Errorf("handlers: replay stage %q: want parse or store", cfg.Stage)
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Sink != nil {
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if cerr := cfg.Sink.Close(cctx); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	now := time.Now()
	from, err := streams.ParsePosition(cfg.From, now)
	if err != nil {
		return res, err
	}
	toOf := map[string]string{} // stream -> last entry to replay
	for _, stream := range streamsIn {
		to := cfg.To
		if to == "" || to == "$" {
			st, err := streams.ReadGroupState(ctx, cfg.Client, stream, "")
			if err != nil {
				return res, err
			}
			to = st.LastEntry // "" when empty: nothing of it is replayed
		} else if to, err = streams.ParsePosition(to, now); err != nil {
			return res, err
		}
		if to != "" {
			toOf[stream] = to
		}
	}
	if len(toOf) == 0 {
		return res, fmt.Errorf("handlers: %s is empty: nothing to replay", strings.Join(streamsIn, ", "))
	}
	if cfg.Group == "" {
		cfg.Group = "replay-" + cfg.Stage + "-" + strconv.FormatInt(now.UnixMilli(), 10)
	}
	if cfg.Group == streams.StageFetch || cfg.Group == streams.StageParse || cfg.Group == streams.StageStore {
		return res, streams.ErrStageGroup
	}
	start := from
	if from != "$" {
		start = streams.Before(from)
	}
	var replayed []string
	for _, stream := range streamsIn {
		if toOf[stream] == "" {
			continue
		}
		if err := streams.CreateGroup(ctx, cfg.Client, stream, cfg.Group, start, true); err != nil {
			return res, err
		}
		replayed = append(replayed, stream)
	}
	res.Group = cfg.Group
	var entries, items, skipped, discarded atomic.Int64
	var pub *streams.Publisher
	if cfg.Sink == nil {
		if pub, err = streams.NewPublisher(cfg.Client); err != nil {
			return res, err
		}
		defer pub.Shutdown()
	}
	var parse *Parse
	if cfg.Spider != nil {
		parse = &Parse{spider: cfg.Spider, log: cfg.Logger}
	}
	handle := func(msg *message.Message) error {
		stream := message.SubscribeTopicFromCtx(msg.Context())
		if streams.CompareIDs(msg.Metadata.Get(streams.MetaStreamID), toOf[stream]) > 0 {
			skipped.Add(1)
			return nil
		}
		entries.Add(1)
		var out []spiders.Item
		if cfg.Stage == streams.StageStore {
			it, err := spiders.UnmarshalItem(msg.Payload)
			if err != nil {
				return fmt.Errorf("%w: %w", streams.ErrPoison, err)
			}
			out = append(out, *it)
		} else {
			if err := ensureResponseDict(msg.Context(), cfg.Client, layout.Global(), msg.Payload); err != nil {
				return err
			}
			r, err := spiders.UnmarshalResponseLimit(msg.Payload, parse.maxBody())
			if err != nil {
				return fmt.Errorf("%w: %w", streams.ErrPoison, err)
			}
			o, err := parse.run(msg.Context(), r)
			if err != nil {
				return err
			}
			discarded.Add(int64(len(o.Requests)))
			for i := range o.Items {
				stamp(&o.Items[i], r)
			}
			out = o.Items
		}
		for i := range out {
			if cfg.Sink != nil {
				if _, err := cfg.Sink.Store(msg.Context(), &out[i]); err != nil {
					return err
				}
				continue
			}
			payload, err := spiders.MarshalItem(&out[i])
			if err != nil {
				return fmt.Errorf("%w: %w", streams.ErrPoison, err)
			}
			m := message.NewMessage(watermill.NewUUID(), payload)
			m.Metadata.Set(MetaReplay, cfg.Group)
			if err := pub.PublishContext(msg.Context(), itemsOf[stream], m); err != nil {
				return err
			}
		}
		items.Add(int64(len(out)))
		return nil
	}
	until := func(ctx context.Context) (bool, error) {
		for _, stream := range replayed {
			st, err := streams.ReadGroupState(ctx, cfg.Client, stream, cfg.Group)
			if err != nil {
				return false, err
			}
			reached := streams.CompareIDs(st.LastDelivered, toOf[stream]) >= 0 || !st.Unread()
			if st.Pending > 0 || !reached {
				return false, nil
			}
		}
		return true, nil
	}
	err = RunGroup(ctx, GroupConfig{Client: cfg.Client, Streams: replayed, Group: cfg.Group, StartID: start,
		Consumer: cfg.Consumer, Handle: handle, Until: until, Subscriber: cfg.Subscriber,
		Logger: cfg.Logger})
	res.Entries, res.Items, res.Skipped, res.RequestsDiscarded = entries.Load(), items.Load(), skipped.Load(), discarded.Load()
	return res, err
}

// stamp sets the page's URL, fetch time and request meta on an item.
func stamp(it *spiders.Item, res *spiders.Response) {
	it.URL = res.URL
	it.CrawledAt = res.FetchedAt
	if it.Meta == nil && res.Request != nil {
		it.Meta = res.Request.Meta
	}
}
