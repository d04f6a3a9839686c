package inspect

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"

	"github.com/redis/go-redis/v9"
)

// GroupState is where one consumer group stands on a stream.
type GroupState struct {
	// Exists reports whether the group exists.
	Exists bool `json:"exists"`
	// Pending is how many entries the group's consumers hold without an ack.
	Pending int64 `json:"pending"`
	// LastDelivered is the ID of the last entry delivered to the group.
	LastDelivered string `json:"last_delivered"`
	// LastEntry is the stream's newest entry ("" when empty).
	LastEntry string `json:"last_entry"`
	// Unread reports entries after the group's last-delivered ID.
	Unread bool `json:"unread"`
}

// ReadGroupState reads group's state on stream.
func ReadGroupState(ctx context.Context, rdb redis.UniversalClient, stream, group string) (GroupState, error) {
	var st GroupState
	groups, err := rdb.XInfoGroups(ctx, stream).Result()
	if err != nil && !rkit.IsNoSuchKey(err) {
		return st, fmt.Errorf("inspect: groups of %s: %w", stream, err)
	}
	for _, g := range groups {
		if g.Name == group {
			st.Exists, st.Pending, st.LastDelivered = true, g.Pending, g.LastDeliveredID
		}
	}
	last, err := rdb.XRevRangeN(ctx, stream, "+", "-", 1).Result()
	if err != nil {
		return st, fmt.Errorf("inspect: last entry of %s: %w", stream, err)
	}
	if len(last) > 0 {
		st.LastEntry = last[0].ID
	}
	st.Unread = st.LastEntry != "" && CompareIDs(st.LastEntry, st.LastDelivered) > 0
	return st, nil
}

// CompareIDs compares two stream IDs ("ms-seq" or "ms"): -1, 0 or 1.
func CompareIDs(a, b string) int {
	am, as := splitID(a)
	bm, bs := splitID(b)
	switch {
	case am != bm:
		return cmpU(am, bm)
	default:
		return cmpU(as, bs)
	}
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func splitID(id string) (uint64, uint64) {
	ms, seq, _ := strings.Cut(id, "-")
	m, _ := strconv.ParseUint(ms, 10, 64)
	s, _ := strconv.ParseUint(seq, 10, 64)
	return m, s
}

// ParsePosition reads a position in a stream given as an entry ID ("1700000000000-0" or
// "1700000000000"), "0" or "-" for the beginning, "$" for the end, an RFC 3339 time, or
// a duration ago ("2h"). It returns an entry ID ("$" for the end).
func ParsePosition(s string, now time.Time) (string, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "0", "-", "0-0":
		return "0-0", nil
	case "$", "+":
		return "$", nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return strconv.FormatInt(t.UnixMilli(), 10) + "-0", nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return strconv.FormatInt(now.Add(-d).UnixMilli(), 10) + "-0", nil
	}
	ms, seq, hasSeq := strings.Cut(s, "-")
	if _, err := strconv.ParseUint(ms, 10, 64); err != nil {
		return "", fmt.Errorf("inspect: position %q: want an entry ID, a time (RFC 3339) or a duration ago", s)
	}
	if !hasSeq {
		return ms + "-0", nil
	}
	if _, err := strconv.ParseUint(seq, 10, 64); err != nil {
		return "", fmt.Errorf("inspect: position %q: bad sequence number", s)
	}
	return s, nil
}

// GroupStart returns the ID a group created to deliver the entries from position on
// (as ParsePosition reads it) starts after: the ID just before it ("$", the end, as it
// is).
func GroupStart(position string, now time.Time) (string, error) {
	pos, err := ParsePosition(position, now)
	if err != nil || pos == "$" {
		return pos, err
	}
	return before(pos), nil
}

// before returns the ID just before id, so that a group created there delivers id first.
func before(id string) string {
	ms, seq := splitID(id)
	switch {
	case seq > 0:
		return fmt.Sprintf("%d-%d", ms, seq-1)
	case ms > 0:
		return fmt.Sprintf("%d-%d", ms-1, uint64(math.MaxUint64))
	}
	return "0-0"
}

// CreateGroup creates group on stream delivering entries after id (creating the stream if
// needed); an existing group is an error unless setID moves it (XGROUP SETID).
func CreateGroup(ctx context.Context, rdb redis.UniversalClient, stream, group, id string, setID bool) error {
	err := rdb.XGroupCreateMkStream(ctx, stream, group, id).Err()
	if err != nil && strings.HasPrefix(err.Error(), "BUSYGROUP") {
		if !setID {
			return fmt.Errorf("inspect: group %s already exists on %s", group, stream)
		}
		err = rdb.XGroupSetID(ctx, stream, group, id).Err()
	}
	if err != nil {
		return fmt.Errorf("inspect: group %s on %s at %s: %w", group, stream, id, err)
	}
	return nil
}

// ErrStageGroup refuses changes to the crawl's own stage groups.
var ErrStageGroup = errors.New("inspect: fetch, parse and store are the crawl's own groups")
