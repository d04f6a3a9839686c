package streams_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestTrimKeepsWhatAnyGroupHasNotAcked: a lagging group keeps its unread and pending
// entries; only entries every group has acked (and past retention) go.
func TestTrimKeepsWhatAnyGroupHasNotAcked(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	var ids []string
	for i := 0; i < 100; i++ {
		id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: map[string]any{"i": i}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, g := range []string{"fast", "slow"} {
		if err := rdb.XGroupCreate(ctx, "s", g, "0").Err(); err != nil {
			t.Fatal(err)
		}
	}
	read := func(group string, n int64) []redis.XMessage {
		res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "c", Streams: []string{"s", ">"}, Count: n}).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Messages
	}
	// fast reads and acks everything; slow reads 40, acks the first 30, leaves 10 pending
	// and 60 unread.
	for _, m := range read("fast", 100) {
		rdb.XAck(ctx, "s", "fast", m.ID)
	}
	for i, m := range read("slow", 40) {
		if i < 30 {
			rdb.XAck(ctx, "s", "slow", m.ID)
		}
	}
	tests := []struct {
		name    string
		r       spiders.StreamRetention
		wantLen int64
	}{
		{"count retention keeps the last 80", spiders.StreamRetention{MinCount: 80}, 80},
		{"age retention keeps everything young", spiders.StreamRetention{MaxAge: time.Hour}, 80},
		{"no retention trims to the oldest pending of the lagging group", spiders.StreamRetention{}, 70},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := streams.Trim(ctx, rdb, "s", tt.r, time.Now()); err != nil {
				t.Fatal(err)
			}
			if n := rdb.XLen(ctx, "s").Val(); n != tt.wantLen {
				t.Fatalf("length after trim = %d, want %d", n, tt.wantLen)
			}
		})
	}
	first := rdb.XRange(ctx, "s", "-", "+").Val()[0].ID
	if first != ids[30] {
		t.Fatalf("first kept entry = %s, want the slow group's oldest pending %s", first, ids[30])
	}
	// The slow group still gets every entry it has not read.
	if got := len(read("slow", 1000)); got != 60 {
		t.Fatalf("slow group read %d unread entries after trims, want 60", got)
	}
}

func TestTrimWithoutGroupsKeepsEverything(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		rdb.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: map[string]any{"i": i}})
	}
	if _, err := streams.Trim(ctx, rdb, "s", spiders.StreamRetention{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := rdb.XLen(ctx, "s").Val(); n != 10 {
		t.Fatalf("length = %d, want 10", n)
	}
}

// TestRetentionAgeWithTheTrimmerAndAStoppedGroup: acked entries past retention go; a
// stopped group's unread entries all stay, whatever their age.
func TestRetentionAgeWithTheTrimmerAndAStoppedGroup(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	now := time.Now()
	old := now.Add(-3 * time.Hour).UnixMilli()
	for i := 0; i < 50; i++ { // 50 entries three hours old
		rdb.XAdd(ctx, &redis.XAddArgs{Stream: "items", ID: fmt.Sprintf("%d-%d", old, i), Values: map[string]any{"i": i}})
	}
	for i := 0; i < 30; i++ { // 30 recent ones
		rdb.XAdd(ctx, &redis.XAddArgs{Stream: "items", Values: map[string]any{"i": 50 + i}})
	}
	for _, g := range []string{"store", "stopped"} {
		if err := rdb.XGroupCreate(ctx, "items", g, "0").Err(); err != nil {
			t.Fatal(err)
		}
	}
	res, _ := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "store", Consumer: "c", Streams: []string{"items", ">"}, Count: 1000}).Result()
	for _, m := range res[0].Messages {
		rdb.XAck(ctx, "items", "store", m.ID)
	}
	trimmer, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		tr := &streams.Trimmer{Client: rdb, Streams: map[string]spiders.StreamRetention{"items": {MaxAge: time.Hour}}, Interval: 20 * time.Millisecond}
		if err := tr.Run(trimmer); err != nil {
			t.Error(err)
		}
		close(done)
	}()
	time.Sleep(200 * time.Millisecond)
	if n := rdb.XLen(ctx, "items").Val(); n != 80 {
		t.Fatalf("with a stopped group, length = %d, want all 80 kept", n)
	}
	// The stopped group resumes and acks everything: the old entries are past retention.
	res, _ = rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "stopped", Consumer: "c", Streams: []string{"items", ">"}, Count: 1000}).Result()
	if len(res[0].Messages) != 80 {
		t.Fatalf("the stopped group read %d entries on resuming, want 80", len(res[0].Messages))
	}
	for _, m := range res[0].Messages {
		rdb.XAck(ctx, "items", "stopped", m.ID)
	}
	deadline := time.Now().Add(10 * time.Second)
	for rdb.XLen(ctx, "items").Val() > 30 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	<-done
	if n := rdb.XLen(ctx, "items").Val(); n != 30 {
		t.Fatalf("after every group acked, length = %d, want the 30 entries younger than the 1h retention", n)
	}
}

// TestTrimByBytes: a byte limit removes the oldest acked entries until the stream's
// MEMORY USAGE fits, but never an entry a group has not acked.
func TestTrimByBytes(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	body := strings.Repeat("x", 4096)
	var ids []string
	for i := 0; i < 400; i++ {
		id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: map[string]any{"i": i, "body": body}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, g := range []string{"fast", "slow"} {
		if err := rdb.XGroupCreate(ctx, "s", g, "0").Err(); err != nil {
			t.Fatal(err)
		}
	}
	read := func(group string, n int64) []redis.XMessage {
		res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "c", Streams: []string{"s", ">"}, Count: n}).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Messages
	}
	for _, m := range read("fast", 400) {
		rdb.XAck(ctx, "s", "fast", m.ID)
	}
	slow := read("slow", 300)
	for _, m := range slow[:250] {
		rdb.XAck(ctx, "s", "slow", m.ID)
	}
	const limit = 512 << 10 // ~125 entries; the slow group still needs 150
	r := spiders.StreamRetention{MaxBytes: limit}
	before := rdb.MemoryUsage(ctx, "s", 0).Val()
	if _, err := streams.Trim(ctx, rdb, "s", r, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n, first := rdb.XLen(ctx, "s").Val(), rdb.XRange(ctx, "s", "-", "+").Val()[0].ID; n != 150 || first != ids[250] {
		t.Fatalf("after trim: %d entries from %s; want 150 from the slow group's oldest pending %s", n, first, ids[250])
	}
	// The slow group catches up: now the byte limit decides.
	for _, m := range slow[250:] {
		rdb.XAck(ctx, "s", "slow", m.ID)
	}
	for _, m := range read("slow", 1000) {
		rdb.XAck(ctx, "s", "slow", m.ID)
	}
	if _, err := streams.Trim(ctx, rdb, "s", r, time.Now()); err != nil {
		t.Fatal(err)
	}
	used, n := rdb.MemoryUsage(ctx, "s", 0).Val(), rdb.XLen(ctx, "s").Val()
	last := rdb.XRevRangeN(ctx, "s", "+", "-", 1).Val()
	if len(last) == 0 || last[0].ID != ids[399] {
		t.Fatalf("the newest entry was trimmed")
	}
	if used > limit || used < limit*9/10 {
		t.Fatalf("after trim: %d bytes in %d entries (was %d); want within 90-100%% of %d", used, n, before, limit)
	}
	// The Trimmer's byte ticks (TrimBytes): a stream that fits costs no script; one
	// that grew past the limit is trimmed back under it.
	scripts := func() int64 {
		_, rest, _ := strings.Cut(rdb.Info(ctx, "commandstats").Val(), "cmdstat_evalsha:calls=")
		n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		return n
	}
	calls := scripts()
	if n, err := streams.TrimBytes(ctx, rdb, "s", r, time.Now()); err != nil || n != 0 {
		t.Fatalf("a byte tick over a stream that fits removed %d (%v), want 0", n, err)
	}
	if d := scripts() - calls; d != 0 {
		t.Fatalf("a byte tick over a stream that fits ran %d scripts, want 0", d)
	}
	for i := 0; i < 50; i++ {
		rdb.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: map[string]any{"i": 400 + i, "body": body}})
	}
	for _, g := range []string{"fast", "slow"} {
		for _, m := range read(g, 100) {
			rdb.XAck(ctx, "s", g, m.ID)
		}
	}
	if n, err := streams.TrimBytes(ctx, rdb, "s", r, time.Now()); err != nil || n == 0 {
		t.Fatalf("a byte tick over a stream past its limit removed %d (%v), want some", n, err)
	}
	if used := rdb.MemoryUsage(ctx, "s", 0).Val(); used > limit {
		t.Fatalf("after a byte tick: %d bytes, want at most %d", used, limit)
	}
	// Age and bytes together: an age of 0 with a byte limit keeps by bytes only; a
	// short age removes what the bytes would have kept.
	if _, err := streams.Trim(ctx, rdb, "s", spiders.StreamRetention{MaxBytes: limit, MaxAge: time.Millisecond}, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if n := rdb.XLen(ctx, "s").Val(); n != 0 {
		t.Fatalf("age 1ms and a byte limit left %d entries, want 0", n)
	}
}

// TestTrimByBytesOnALongStream: a stream of thousands of nodes (small entries of
// varying size, as items are) is measured by a sample of its nodes, and trimmed to its
// byte limit as exactly as when every node was read.
func TestTrimByBytesOnALongStream(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	const entries = 60000
	for at := 0; at < entries; at += 1000 {
		pipe := rdb.Pipeline()
		for i := at; i < at+1000; i++ {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: map[string]any{"i": i, "body": strings.Repeat("y", 100+i%400)}})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.XGroupCreate(ctx, "s", "g", "$").Err(); err != nil { // every entry read and acked
		t.Fatal(err)
	}
	before := rdb.MemoryUsage(ctx, "s", 0).Val()
	const limit = 4 << 20
	if before < 3*limit {
		t.Fatalf("the stream holds %d bytes, want a long stream of several times %d", before, limit)
	}
	if _, err := streams.Trim(ctx, rdb, "s", spiders.StreamRetention{MaxBytes: limit}, time.Now()); err != nil {
		t.Fatal(err)
	}
	used, n := rdb.MemoryUsage(ctx, "s", 0).Val(), rdb.XLen(ctx, "s").Val()
	if used > limit || used < limit*85/100 {
		t.Fatalf("after trim: %d bytes (every node read) in %d entries, was %d; want within 85-100%% of %d", used, n, before, limit)
	}
}

func TestParseRetentionReadsString(t *testing.T) {
	for _, r := range []spiders.StreamRetention{{}, {MaxAge: 10 * time.Minute}, {MaxBytes: 64 << 20}, {MaxAge: time.Hour, MaxBytes: 1000, MinCount: 5}} {
		got, err := spiders.ParseStreamRetention(r.String())
		if err != nil || got != r {
			t.Errorf("ParseRetention(%q) = %+v, %v; want %+v", r.String(), got, err, r)
		}
	}
	if _, err := spiders.ParseStreamRetention("max_age=soon"); err == nil {
		t.Error("ParseRetention accepted a bad duration")
	}
}
