package handlers

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fetch"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// Gone pages. A URL a revisit rule matches that answers anything but a 200 or a 304
// it asked for (a 404 or 410, another final 4xx, a 5xx or a network error past the
// request's retries, an unsolicited 304, a redirect, a refusal by robots.txt or the
// network guard) is gone. It stays in the schedule at the rule's max interval for
// gone_checks revisits (the count travels in its revisit state) and is back at the
// start interval once it answers 200, its items then new versions. A redirect's source
// is revisited the same way: the target is a URL of its own, queued as any link. Only
// a URL with a chain (scheduled after a 200) stays: one whose first answer is bad has
// none, as before (a dead link is not fetched again and again).
//
// When a page the crawl had (its last answer was a 200) turns gone, the consumers get
// one tombstone item, through the items stream and the sinks like any item; a page
// that stays gone gets none on its later revisits.

// GoneType is the type of the tombstone item of a page that is gone (its _type).
const GoneType = "_gone"

// badAnswer schedules the revisit of req, whose fetch gave the bad answer res, at the
// rule's max interval (while the rule checks a gone page still), and sends the
// tombstone when the page was one the crawl had.
func (v *revisitor) badAnswer(ctx context.Context, req *spiders.Request, rule *spiders.RevisitRule, st revisitState, res fetch.Result, token string) error {
	if st.cur == 0 {
		return nil // not a revisit: a URL that never answered 200 has no chain to keep
	}
	if st.gone == 0 && st.digest != "" {
		if err := v.tombstone(ctx, req, res, token); err != nil {
			return err
		}
	}
	gone := st.gone + 1
	if !rule.Gone(gone) {
		v.count("revisits_gone_ended", 1)
		return nil
	}
	return v.schedule(ctx, req, st, rule.Max, revisitState{digest: st.digest, gone: gone}, token, false)
}

// tombstone emits the tombstone item of req's page (see goneItem). It goes out before
// the revisit is scheduled and is keyed by the fetch's mark, so a fetch redelivered
// after its worker died sends it once.
func (v *revisitor) tombstone(ctx context.Context, req *spiders.Request, res fetch.Result, token string) error {
	it := goneItem(req, res, time.Now().UTC())
	payload, err := spiders.MarshalItem(&it)
	if err != nil {
		return fmt.Errorf("%w: handlers: tombstone of %s: %w", streams.ErrPoison, spiders.RedactedURL(req.URL), err)
	}
	sum := sha256.Sum256([]byte(GoneType + "\x00" + req.URL + "\x00" + strconv.FormatUint(uint64(revisitGen(token)), 16)))
	part := v.layout.PartitionOf(spiders.HostKey(req.URL))
	e, err := v.frontier.Emit(ctx, part, nil, []frontier.ItemOut{{Key: sum[:16], Payload: payload}})
	if err != nil {
		return fmt.Errorf("handlers: tombstone of %s: %w", spiders.RedactedURL(req.URL), err)
	}
	v.count("items_gone", int64(e.Items))
	return nil
}

// goneItem is the tombstone of req's page after the bad answer res, at now: type
// GoneType, fields url, _status "gone", http_status (0: no answer, e.g. a network
// error), reason (what the fetcher made of the answer) and gone_at. Its key is url
// and gone_at, so each time the page goes is a row of its own in a keyed sink.
func goneItem(req *spiders.Request, res fetch.Result, now time.Time) spiders.Item {
	url := spiders.RedactedURL(req.URL)
	reason := res.Reason
	switch res.Outcome {
	case fetch.Redirect:
		reason = "redirect"
	case fetch.Dead:
		reason = "failed"
	}
	it := spiders.NewItem(GoneType, map[string]any{"url": url, "_status": "gone", "http_status": res.Status, "reason": reason,
		"gone_at": now.Format(time.RFC3339Nano)})
	it.KeyFields = []string{"url", "gone_at"}
	it.URL, it.CrawledAt, it.Meta = url, now, spiders.UserMeta(req.Meta)
	return it
}
