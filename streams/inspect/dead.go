package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/redis/go-redis/v9"
)

// DeadLetter is one entry of the dead-letter stream.
type DeadLetter struct {
	// ID is the dead-letter entry's ID.
	ID string `json:"id"`
	// Stream is where the entry lived.
	Stream string `json:"stream"`
	// EntryID is its ID there (stream entries only).
	EntryID string `json:"entry_id"`
	// Stage is the group that gave up on it, or "frontier", "seed".
	Stage string `json:"stage"`
	// Error is the last error.
	Error string `json:"error"`
	// Deliveries is how often the entry was delivered.
	Deliveries int `json:"deliveries"`
	// Consumer is the consumer that gave up on it.
	Consumer string `json:"consumer"`
	// Fields are the original entry's fields (the Watermill message).
	Fields map[string]string `json:"fields"`
}

// ListDead returns up to limit dead letters of the crawl, partition after partition,
// the oldest first in each.
func ListDead(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, limit int64) ([]DeadLetter, error) {
	var out []DeadLetter
	for _, k := range l.Parts {
		if int64(len(out)) >= limit {
			break
		}
		msgs, err := rdb.XRangeN(ctx, k.Dead, "-", "+", limit-int64(len(out))).Result()
		if err != nil {
			return out, fmt.Errorf("inspect: list dead letters: %w", err)
		}
		for _, m := range msgs {
			out = append(out, parseDead(m))
		}
	}
	return out, nil
}

// RetryDead puts dead letters of the crawl back on the streams they came from: the
// entries with the given IDs (looked for in every partition's dead-letter stream), or
// all of them when ids is empty. rewrite, when set, gives the payload to put back of a
// dead letter of partition k (nil: its original one). It returns how many were
// re-queued; an ID found nowhere is an error (after the others are re-queued).
func RetryDead(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, ids []string,
	rewrite func(k streams.Keys, d DeadLetter) ([]byte, error)) (int, error) {
	n := 0
	found := map[string]bool{}
	for _, k := range l.Parts {
		var dead []DeadLetter
		if len(ids) > 0 {
			// A dead letter's ID names it within its partition's stream: look in each.
			byID, err := findDead(ctx, rdb, k, ids)
			if err != nil {
				return n, err
			}
			for _, id := range ids {
				if len(byID[id]) > 0 {
					dead, found[id] = append(dead, byID[id]...), true
				}
			}
		} else {
			msgs, err := rdb.XRange(ctx, k.Dead, "-", "+").Result()
			if err != nil {
				return n, fmt.Errorf("inspect: list dead letters: %w", err)
			}
			for _, m := range msgs {
				dead = append(dead, parseDead(m))
			}
		}
		for _, d := range dead {
			var payload []byte
			if rewrite != nil {
				var err error
				if payload, err = rewrite(k, d); err != nil {
					return n, err
				}
			}
			if _, err := requeue(ctx, rdb, k, d, payload); err != nil {
				return n, err
			}
			n++
		}
	}
	for _, id := range ids {
		if !found[id] {
			return n, fmt.Errorf("inspect: no dead letter %s in crawl %s (re-queued %d)", id, l.Crawl, n)
		}
	}
	return n, nil
}

// AddDead writes a dead letter of partition k for what a stage gave up on before it
// became an entry of stream (an item without its key, at the parse stage): the stage,
// the error and the payload, as a Watermill message of stream, so that a dead retry
// puts it there.
func AddDead(ctx context.Context, rdb redis.UniversalClient, k streams.Keys, stream, stage, errText string, payload []byte) error {
	d := rkit.Dead{Stream: stream, Stage: stage, Error: errText}
	v := d.Values("_watermill_message_uuid", watermill.NewUUID(), "metadata", "", "payload", payload)
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Dead, Values: v}).Err(); err != nil {
		return fmt.Errorf("inspect: add a dead letter: %w", err)
	}
	return nil
}

// findDead returns the dead letters of partition k that ids name, by the ID given: a
// dead letter's own ID (what `dead list` shows first), or the ID its entry had in its
// stream (EntryID, what the stages log as entry_id), which finds every dead letter of
// that entry.
func findDead(ctx context.Context, rdb redis.UniversalClient, k streams.Keys, ids []string) (map[string][]DeadLetter, error) {
	out := map[string][]DeadLetter{}
	var byEntry []string
	for _, id := range ids {
		msgs, err := rdb.XRange(ctx, k.Dead, id, id).Result()
		if err != nil && !rkit.IsNoSuchKey(err) {
			// Not an entry ID at all ("ERR Invalid stream ID"): it names nothing here.
			if strings.Contains(err.Error(), "Invalid stream ID") {
				continue
			}
			return nil, fmt.Errorf("inspect: dead letter %s: %w", id, err)
		}
		if len(msgs) > 0 {
			out[id] = append(out[id], parseDead(msgs[0]))
			continue
		}
		byEntry = append(byEntry, id)
	}
	if len(byEntry) == 0 {
		return out, nil
	}
	// Looked up by the entry's ID: a dead-letter stream is short, read it whole.
	msgs, err := rdb.XRange(ctx, k.Dead, "-", "+").Result()
	if err != nil {
		return nil, fmt.Errorf("inspect: list dead letters: %w", err)
	}
	for _, m := range msgs {
		d := parseDead(m)
		if d.EntryID != "" && slices.Contains(byEntry, d.EntryID) {
			out[d.EntryID] = append(out[d.EntryID], d)
		}
	}
	return out, nil
}

func parseDead(m redis.XMessage) DeadLetter {
	d := DeadLetter{ID: m.ID, Fields: map[string]string{}}
	for f, v := range m.Values {
		s, _ := v.(string)
		switch f {
		case rkit.DeadStream:
			d.Stream = s
		case rkit.DeadID:
			d.EntryID = s
		case rkit.DeadStage:
			d.Stage = s
		case rkit.DeadError:
			d.Error = s
		case rkit.DeadDeliveries:
			d.Deliveries, _ = strconv.Atoi(s)
		case rkit.DeadConsumer:
			d.Consumer = s
		default:
			d.Fields[f] = s
		}
	}
	return d
}

// requeueScript puts a dead letter's entry back on its stream and deletes the dead
// letter, in one step.
//
// KEYS[1] -> the stream, KEYS[2] -> the dead-letter stream
// ARGV[1] -> dead letter ID, ARGV[2..] -> field, value pairs of the new entry
// Output: the new entry ID, or false when the dead letter is gone
var requeueScript = redis.NewScript(`
if #redis.call('XRANGE', KEYS[2], ARGV[1], ARGV[1]) == 0 then return false end
local fields = {}
for i = 2, #ARGV do fields[#fields + 1] = ARGV[i] end
local id = redis.call('XADD', KEYS[1], '*', unpack(fields))
redis.call('XDEL', KEYS[2], ARGV[1])
return id
`)

// requeue puts dead letter d back on its stream with payload (the original payload when
// nil) under a new message UUID, and deletes it from the dead letters. The stage's group
// then delivers it as a new entry.
func requeue(ctx context.Context, rdb redis.UniversalClient, k streams.Keys, d DeadLetter, payload []byte) (string, error) {
	if !owns(k, d.Stream) {
		return "", fmt.Errorf("inspect: dead letter %s names stream %q, not one of crawl %s", d.ID, d.Stream, k.Crawl)
	}
	p := d.Fields["payload"]
	if payload != nil {
		p = string(payload)
	}
	args := []any{d.ID, "_watermill_message_uuid", watermill.NewUUID(), "metadata", d.Fields["metadata"], "payload", p}
	id, err := requeueScript.Run(ctx, rdb, []string{d.Stream, k.Dead}, args...).Text()
	if err != nil {
		if rkit.ErrNil(err) {
			return "", fmt.Errorf("inspect: dead letter %s is gone", d.ID)
		}
		return "", fmt.Errorf("inspect: requeue dead letter %s: %w", d.ID, err)
	}
	return id, nil
}

// PurgeDead deletes the given dead letters of the crawl (looked for in every
// partition), or all of them when ids is empty. It returns how many it deleted.
func PurgeDead(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, ids []string) (int64, error) {
	var n int64
	for _, k := range l.Parts {
		var m int64
		var err error
		if len(ids) == 0 {
			if m, err = rdb.XLen(ctx, k.Dead).Result(); err == nil {
				err = rdb.Del(ctx, k.Dead).Err()
			}
		} else {
			var byID map[string][]DeadLetter
			if byID, err = findDead(ctx, rdb, k, ids); err == nil {
				var del []string
				for _, ds := range byID {
					for _, d := range ds {
						del = append(del, d.ID)
					}
				}
				if len(del) > 0 {
					m, err = rdb.XDel(ctx, k.Dead, del...).Result()
				}
			}
		}
		if err != nil {
			return n, fmt.Errorf("inspect: purge dead letters: %w", err)
		}
		n += m
	}
	return n, nil
}

// owns reports whether stream is one of the crawl's streams.
func owns(k streams.Keys, stream string) bool {
	for _, sg := range stages(k) {
		if sg.Stream == stream {
			return true
		}
	}
	return false
}

// Redacted is d for people (a listing, the dashboard): its error and the fields of
// what died (the request's JSON, a proxy in its meta) without the credentials of any
// URL in them (spiders.RedactText). The dead letter in Redis keeps them, so that a
// retry still fetches with them.
func (d DeadLetter) Redacted() DeadLetter {
	d.Error = spiders.RedactText(d.Error)
	fields := make(map[string]string, len(d.Fields))
	for k, v := range d.Fields {
		fields[k] = spiders.RedactText(v)
	}
	d.Fields = fields
	return d
}

// PageURL digs the page URL out of the payload of d (a request or response of the
// crawl), without its credentials; "" when the payload has none.
func (d DeadLetter) PageURL() string {
	var p struct {
		URL string `json:"url"`
	}
	if json.Unmarshal([]byte(d.Fields["payload"]), &p) != nil {
		return ""
	}
	return spiders.RedactedURL(p.URL)
}
