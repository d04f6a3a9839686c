package inspect_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestDeadLettersByEitherID: a dead letter is named by its own ID (dead list's first
// column) or by the ID its entry had in its stream (what the stages log as entry_id):
// retry and purge take both; an ID that names nothing is an error for retry.
func TestDeadLettersByEitherID(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	l := streams.NewLayout("dl", 1)
	k := l.Parts[0]
	var deadIDs []string
	for _, entry := range []string{"100-0", "200-0", "300-0"} {
		id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Dead, Values: []any{"sc_stream", k.Requests, "sc_id", entry,
			"sc_stage", "fetch", "sc_error", "boom", "sc_deliveries", "5", "_watermill_message_uuid", "u", "metadata", "", "payload", "{}"}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		deadIDs = append(deadIDs, id)
	}
	if n, err := inspect.RetryDead(ctx, rdb, l, []string{"100-0"}, nil); err != nil || n != 1 {
		t.Errorf("retry by entry ID: %d, %v; want 1", n, err)
	}
	if n, _ := rdb.XLen(ctx, k.Requests).Result(); n != 1 {
		t.Errorf("requests stream holds %d entries after the retry, want 1", n)
	}
	if n, err := inspect.PurgeDead(ctx, rdb, l, []string{"200-0", deadIDs[2]}); err != nil || n != 2 {
		t.Errorf("purge by entry ID and by dead-letter ID: %d, %v; want 2", n, err)
	}
	if n, _ := rdb.XLen(ctx, k.Dead).Result(); n != 0 {
		t.Errorf("%d dead letters left, want 0", n)
	}
	if _, err := inspect.RetryDead(ctx, rdb, l, []string{"999-0"}, nil); err == nil || !strings.Contains(err.Error(), "no dead letter 999-0 in crawl dl") {
		t.Errorf("retry of an ID that names nothing: %v", err)
	}
	if _, err := inspect.RetryDead(ctx, rdb, l, []string{"not-an-id"}, nil); err == nil || !strings.Contains(err.Error(), "no dead letter not-an-id in crawl dl") {
		t.Errorf("retry of something that is no ID: %v", err)
	}
}
