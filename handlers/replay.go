package handlers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// ReplayConfig re-runs the parse or store stage over retained entries.
type ReplayConfig struct {
	// Client is the Redis client; Replay does not close it.
	Client redis.UniversalClient
	// Crawl names the crawl.
	Crawl string
	// Spider (required for parse) may be a fixed version of the crawl's spider.
	Spider *spiders.Spider
	// Stage is streams.StageParse (re-parse stored responses, fetching nothing) or
	// streams.StageStore (re-deliver stored items).
	Stage string
	// From and To bound the entries (inclusive), as inspect.ParsePosition reads them;
	// To "" means the stream's newest entry when the replay starts.
	From, To string
	// Sink receives the items. For parse it may be nil: the items then go to the items
	// stream, tagged with the replay group in their metadata (sc_replay), for the store
	// group and post-processors. Replay closes it.
	Sink processors.Sink
	// Group is the consumer group; default replay-<stage>-<unix ms>. An existing group is
	// moved (XGROUP SETID).
	Group string
	// Consumer names this process in the group. Default host-pid.
	Consumer string
	// Subscriber tunes the group's subscriber (its Client, Group and Consumer are set).
	Subscriber streams.SubscriberConfig
	// Logger; nil means no-op.
	Logger *zap.Logger
}

// ReplayResult says what a replay did.
type ReplayResult struct {
	// Group is the consumer group the replay ran in.
	Group string
	// Entries replayed, and Items they gave.
	Entries, Items int64
	// Skipped counts the entries after To.
	Skipped int64
	// RequestsDiscarded counts the requests the re-parsed pages yielded: a replay
	// follows no links.
	RequestsDiscarded int64
}

// MetaReplay tags replayed items on the items stream with the replay's group.
const MetaReplay = "sc_replay"

// Replay runs the replay until it has handled every entry up to To. It is built like
// Run: replayInputs picks the streams, replayBounds where each stops, and a replayer
// handles the entries in one consumer group (runGroup) until it has reached them.
func Replay(ctx context.Context, cfg ReplayConfig) (res ReplayResult, err error) {
	if cfg.Sink != nil {
		defer closeSink(ctx, cfg.Sink, &err)
	}
	layout, err := streams.ReadLayout(ctx, cfg.Client, cfg.Crawl)
	if err != nil {
		return res, err
	}
	rp := &replayer{cfg: cfg, dicts: layout.Global}
	streamsIn, err := rp.inputs(layout)
	if err != nil {
		return res, err
	}
	if rp.cfg.Logger == nil {
		rp.cfg.Logger = zap.NewNop()
	}
	now := time.Now()
	start, err := rp.bounds(ctx, streamsIn, now)
	if err != nil {
		return res, err
	}
	if rp.cfg.Group == "" {
		rp.cfg.Group = "replay-" + cfg.Stage + "-" + strconv.FormatInt(now.UnixMilli(), 10)
	}
	if g := rp.cfg.Group; g == streams.StageFetch || g == streams.StageParse || g == streams.StageStore {
		return res, inspect.ErrStageGroup
	}
	for _, stream := range streamsIn {
		if rp.toOf[stream] == "" {
			continue
		}
		if err := inspect.CreateGroup(ctx, cfg.Client, stream, rp.cfg.Group, start, true); err != nil {
			return res, err
		}
		rp.replayed = append(rp.replayed, stream)
	}
	res.Group = rp.cfg.Group
	if cfg.Sink == nil {
		if rp.pub, err = streams.NewPublisher(cfg.Client, nil); err != nil {
			return res, err
		}
		defer closeLogged(ctx, rp.cfg.Logger, rp.pub.Shutdown)
	}
	if cfg.Spider != nil {
		rp.parse = &parser{spider: cfg.Spider, log: rp.cfg.Logger}
	}
	err = runGroup(ctx, groupConfig{Client: cfg.Client, Streams: rp.replayed, Group: rp.cfg.Group, StartID: start,
		Consumer: cfg.Consumer, Handle: rp.handle, Until: rp.reached, Subscriber: cfg.Subscriber,
		Logger: rp.cfg.Logger})
	res.Entries, res.Items, res.Skipped, res.RequestsDiscarded = rp.entries.Load(), rp.items.Load(), rp.skipped.Load(), rp.discarded.Load()
	return res, err
}

// replayer re-runs one stage over the retained entries of its input streams.
type replayer struct {
	cfg      ReplayConfig
	itemsOf  map[string]string // responses stream -> its partition's items stream
	toOf     map[string]string // stream -> last entry to replay
	replayed []string          // the streams with something to replay
	pub      *streams.Publisher
	parse    *parser
	dicts    streams.Keys // where the crawl's response dictionaries are

	entries, items, skipped, discarded atomic.Int64
}

// inputs returns the streams the stage reads: every partition's, each replayed up to
// its own last entry; a replayed page's items go to its partition's items stream.
func (rp *replayer) inputs(layout streams.Layout) ([]string, error) {
	var in []string
	rp.itemsOf = map[string]string{}
	switch rp.cfg.Stage {
	case streams.StageParse:
		for _, k := range layout.Parts {
			in = append(in, k.Responses)
			rp.itemsOf[k.Responses] = k.Items
		}
		if rp.cfg.Spider == nil {
			return nil, errors.New("handlers: a parse replay needs the spider")
		}
	case streams.StageStore:
		for _, k := range layout.Parts {
			in = append(in, k.Items)
		}
		if rp.cfg.Sink == nil {
			return nil, errors.New("handlers: a store replay needs a sink (--out)")
		}
	default:
		return nil, fmt.Errorf("handlers: replay stage %q: want parse or store", rp.cfg.Stage)
	}
	return in, nil
}

// bounds sets the last entry to replay of each stream (From..To) and returns the ID
// the group starts after.
func (rp *replayer) bounds(ctx context.Context, in []string, now time.Time) (start string, err error) {
	start, err = inspect.GroupStart(rp.cfg.From, now)
	if err != nil {
		return "", err
	}
	rp.toOf = map[string]string{}
	for _, stream := range in {
		to := rp.cfg.To
		if to == "" || to == "$" {
			st, err := inspect.ReadGroupState(ctx, rp.cfg.Client, stream, "")
			if err != nil {
				return "", err
			}
			to = st.LastEntry // "" when empty: nothing of it is replayed
		} else if to, err = inspect.ParsePosition(to, now); err != nil {
			return "", err
		}
		if to != "" {
			rp.toOf[stream] = to
		}
	}
	if len(rp.toOf) == 0 {
		return "", fmt.Errorf("handlers: %s is empty: nothing to replay", strings.Join(in, ", "))
	}
	return start, nil
}

// handle replays one entry: an item is stored again; a response is parsed again (its
// links are not followed) and its items stored, or published to the items stream.
func (rp *replayer) handle(msg *message.Message) error {
	stream := message.SubscribeTopicFromCtx(msg.Context())
	if inspect.CompareIDs(msg.Metadata.Get(streams.MetaStreamID), rp.toOf[stream]) > 0 {
		rp.skipped.Add(1)
		return nil
	}
	rp.entries.Add(1)
	out, err := rp.itemsFrom(msg)
	if err != nil {
		return err
	}
	for i := range out {
		if rp.cfg.Sink != nil {
			if _, err := rp.cfg.Sink.Store(msg.Context(), &out[i]); err != nil {
				return err
			}
			continue
		}
		payload, err := spiders.MarshalItem(&out[i])
		if err != nil {
			return fmt.Errorf("%w: %w", streams.ErrPoison, err)
		}
		m := message.NewMessage(watermill.NewUUID(), payload)
		m.Metadata.Set(MetaReplay, rp.cfg.Group)
		if err := rp.pub.PublishContext(msg.Context(), rp.itemsOf[stream], m); err != nil {
			return err
		}
	}
	rp.items.Add(int64(len(out)))
	return nil
}

// itemsFrom returns the items of an entry: the item itself, or the items the spider
// yields on the response.
func (rp *replayer) itemsFrom(msg *message.Message) ([]spiders.Item, error) {
	if rp.cfg.Stage == streams.StageStore {
		it, err := spiders.UnmarshalItem(msg.Payload)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", streams.ErrPoison, err)
		}
		return []spiders.Item{*it}, nil
	}
	r, err := decodeResponse(msg.Context(), rp.cfg.Client, rp.dicts, msg.Payload, rp.parse.maxBody())
	if err != nil {
		return nil, err
	}
	o, err := rp.parse.run(msg.Context(), r)
	if err != nil {
		return nil, err
	}
	rp.discarded.Add(int64(len(o.Requests)))
	for i := range o.Items {
		stamp(&o.Items[i], r)
	}
	return o.Items, nil
}

// reached reports whether every replayed stream is done: the group has read up to its
// last entry (or has nothing unread) and acked everything.
func (rp *replayer) reached(ctx context.Context) (bool, error) {
	return groupCaughtUp(ctx, rp.cfg.Client, rp.cfg.Group, rp.replayed, rp.toOf)
}

// stamp sets the page's URL, fetch time and request meta on an item: the user's meta,
// not the crawler's own (spiders.UserMeta), which is no item's data.
func stamp(it *spiders.Item, res *spiders.Response) {
	it.URL = spiders.RedactedURL(res.URL) // credentials in a URL's user info stay out of items
	it.CrawledAt = res.FetchedAt
	if it.Meta == nil && res.Request != nil {
		it.Meta = res.Request.Meta
	}
	it.Meta = spiders.UserMeta(it.Meta)
}
