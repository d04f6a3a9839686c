package inspect

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestProgressMarkIgnoresTrimsNotReads: a partition's activity mark (what the two looks
// of a partitioned crawl's progress compare) stays the same when a trimmer takes acked
// entries off a stream, the last one included, and moves when the group reads and acks
// a new entry. A done crawl's processes trim as they stop; before, the mark held the
// stream's last entry ID, so a trim between the two looks read as a move and the crawl as
// not done, and a process then exited 0 where a failover had to be reported.
func TestProgressMarkIgnoresTrimsNotReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := streamstest.Start(t).Client()
	k := streams.NewLayout("marks", 2).Parts[1]
	if err := rdb.XGroupCreateMkStream(ctx, k.Responses, streams.StageParse, "$").Err(); err != nil {
		t.Fatal(err)
	}
	readAndAck := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: k.Responses, Values: []any{"payload", "x"}}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streams.StageParse, Consumer: "c",
			Streams: []string{k.Responses, ">"}, Count: int64(n), Block: -1}).Result()
		if err != nil || len(res) != 1 || len(res[0].Messages) != n {
			t.Fatalf("read %v: %v", res, err)
		}
		for _, m := range res[0].Messages {
			if err := rdb.XAck(ctx, k.Responses, streams.StageParse, m.ID).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	mark := func() (string, partProgress) {
		t.Helper()
		p, err := readPartProgress(ctx, rdb, k)
		if err != nil {
			t.Fatal(err)
		}
		return p.mark, p
	}
	readAndAck(3)
	before, p := mark()
	if s := p.stages[1]; s.Pending != 0 || s.Unread || s.Length != 3 {
		t.Fatalf("parse stage %+v, want 3 entries, none pending or unread", s)
	}
	if err := rdb.XTrimMaxLen(ctx, k.Responses, 0).Err(); err != nil {
		t.Fatal(err)
	}
	after, p := mark()
	if p.stages[1].Length != 0 {
		t.Fatalf("%d entries left after the trim", p.stages[1].Length)
	}
	if after != before {
		t.Errorf("a trim of acked entries moved the mark: %q -> %q", before, after)
	}
	readAndAck(1)
	if moved, _ := mark(); moved == after {
		t.Errorf("an entry read and acked left the mark as it was: %q", moved)
	}
}
