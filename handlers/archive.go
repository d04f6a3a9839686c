package handlers

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/processors/warc"
	"github.com/streamcrawl/streamcrawl/processors/warcs3"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// DefaultArchiveGroup is the consumer group of archivers on the responses streams.
const DefaultArchiveGroup = "archive"

// ArchiveConfig runs an archiver: a consumer group of its own on the crawl's responses
// streams that writes every response to WARC files in Dir. Archivers in one group share
// the work; each writes its own files (named after its consumer).
type ArchiveConfig struct {
	// Client is the Redis client; Archive does not close it.
	Client redis.UniversalClient
	// Crawl names the crawl.
	Crawl string
	// Dir receives the .warc.gz files; an archiver restarted on the same Dir writes no
	// page twice. With Upload, Dir is a spool of files not yet uploaded.
	Dir string
	// Upload, if set, sends every closed file to object storage and removes it from Dir
	// (see archive_s3.go): an archiver restarted on the same Dir uploads what is left
	// there first, and writes no page the bucket holds already.
	Upload *warcs3.Store
	// MaxFileSize rotates files past this size. Default warc.DefaultMaxFileSize.
	MaxFileSize int64
	// Group defaults to DefaultArchiveGroup.
	Group string
	// MaxBodySize caps the decoded body of a stored response. Default the spiders'.
	MaxBodySize int64
	// UserAgent is written in the request records. Default the spiders'.
	UserAgent string
	// UntilDone returns once the crawl is done and the group has archived every response.
	UntilDone bool
	// Consumer names this process in the group. Default host-pid.
	Consumer string
	// Subscriber tunes the group's subscriber (its Client, Group and Consumer are set).
	Subscriber streams.SubscriberConfig
	// Logger; nil means no-op.
	Logger *zap.Logger
	// BeforeAck is the test fault hook (see streams.SubscriberConfig.BeforeAck).
	BeforeAck func(msg *message.Message)
}

// Archive runs the archiver until ctx ends (or, with UntilDone, until the crawl and the
// group are done). At-least-once: a response is acked only after its records are synced
// to disk; one delivered again is skipped (its record IDs derive from its stream entry).
// Responses leave Redis once every group acked them: create the group before the crawl
// (streamcrawl groups create --stream responses --group archive) to archive every page.
func Archive(ctx context.Context, cfg ArchiveConfig) error {
	if cfg.Group == "" {
		cfg.Group = DefaultArchiveGroup
	}
	if cfg.Group == streams.StageFetch || cfg.Group == streams.StageParse || cfg.Group == streams.StageStore {
		return inspect.ErrStageGroup
	}
	if cfg.MaxBodySize <= 0 {
		cfg.MaxBodySize = spiders.DefaultMaxBodySize
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = spiders.DefaultUserAgent
	}
	base := runConfig{Options: Options{Consumer: cfg.Consumer, Logger: cfg.Logger}}
	base.setBasicDefaults()
	log := base.Logger
	layout, err := streams.ReadLayout(ctx, cfg.Client, cfg.Crawl)
	if err != nil {
		return err
	}
	var responses []string
	for _, k := range layout.Parts {
		responses = append(responses, k.Responses)
	}
	w, err := openArchiveWriter(ctx, cfg, cfg.Crawl+"-"+base.Consumer, log)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed {
			w.Close(ctx)
		}
	}()
	log.Info("archive open", zap.String("dir", cfg.Dir), zap.Int("pages", w.Len()))
	handle := func(msg *message.Message) error {
		res, err := decodeResponse(msg.Context(), cfg.Client, layout.Global, msg.Payload, cfg.MaxBodySize)
		if err != nil {
			return err
		}
		reqJSON, err := spiders.MarshalRequest(res.Request)
		if err != nil {
			return fmt.Errorf("%w: %w", streams.ErrPoison, err)
		}
		hdr := http.Header{"User-Agent": {cfg.UserAgent}}
		for k, v := range res.Request.Headers {
			hdr.Set(k, v)
		}
		_, err = w.WritePage(&warc.Page{
			Key: cfg.Crawl + "/" + msg.Metadata.Get(streams.MetaStreamID), URL: res.URL,
			Method: res.Request.HTTPMethod(), RequestHeader: hdr, RequestJSON: reqJSON,
			Status: res.Status, Header: res.Headers, Body: res.Body, Date: res.FetchedAt, RenderedBy: res.RenderedBy,
		})
		return err
	}
	var until func(ctx context.Context) (bool, error)
	if cfg.UntilDone {
		until = func(ctx context.Context) (bool, error) {
			return groupDone(ctx, cfg.Client, layout, cfg.Group, responses)
		}
	}
	// The archiver trims the responses it acked, with the retention the crawl recorded:
	// an archiver that lags behind a finished crawl must not leave them in Redis.
	retention, err := inspect.RecordedRetention(ctx, cfg.Client, layout.Global.Meta, "responses")
	if err != nil {
		log.Warn("retention of the responses unknown; trimming them once acked", zap.Error(err))
	}
	trim := map[string]spiders.StreamRetention{}
	for _, s := range responses {
		trim[s] = retention
	}
	err = runGroup(ctx, groupConfig{Client: cfg.Client, Streams: responses, Group: cfg.Group, StartID: "0",
		Consumer: base.Consumer, Handle: handle, Until: until, Subscriber: cfg.Subscriber,
		Logger: log, BeforeAck: cfg.BeforeAck, PollInterval: 250 * time.Millisecond,
		Background: []component{&streams.Trimmer{Client: cfg.Client, Streams: trim, Logger: log}, w}})
	closed = true
	if cerr := w.Close(ctx); err == nil && cerr != nil {
		err = fmt.Errorf("handlers: archive: %w", cerr)
	}
	return err // the trimmer trimmed once more as the group stopped
}

// EnsureArchiveGroup creates the archive group on the crawl's responses streams (at
// their start) if missing, so that no response is trimmed before it is archived.
func EnsureArchiveGroup(ctx context.Context, rdb redis.UniversalClient, layout streams.Layout, group string) error {
	if group == "" {
		group = DefaultArchiveGroup
	}
	for _, k := range layout.Parts {
		err := rdb.XGroupCreateMkStream(ctx, k.Responses, group, "0").Err()
		if err != nil && !isBusyGroup(err) {
			return fmt.Errorf("handlers: create group %s on %s: %w", group, k.Responses, err)
		}
	}
	return nil
}

func isBusyGroup(err error) bool {
	return err != nil && len(err.Error()) >= 9 && err.Error()[:9] == "BUSYGROUP"
}
