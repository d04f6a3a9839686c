package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// resp is the commands as a client sends them: arrays of bulk strings.
func resp(cmds ...[]string) []byte {
	var b strings.Builder
	for _, c := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(c))
		for _, a := range c {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	return []byte(b.String())
}

// TestRespParserNamesCommandsAcrossReads: the parser names each command (an EVALSHA by
// its script's SHA) however the bytes are split between reads, and is between commands
// only once the last one is whole.
func TestRespParserNamesCommandsAcrossReads(t *testing.T) {
	big := strings.Repeat("x", 70000)
	stream := resp([]string{"evalsha", "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d", "1", "k"},
		[]string{"XADD", "s", "1-1", "payload", big}, []string{"XACK", "s", "g", "1-1"}, []string{"PING"})
	want := []string{"EVALSHA 1a2b3c4d", "XADD", "XACK", "PING"}
	for _, size := range []int{1, 2, 3, 7, 100, 4096, len(stream)} {
		var p respParser
		for i := 0; i < len(stream); i += size {
			p.feed(stream[i:min(i+size, len(stream))])
			if end := min(i+size, len(stream)); p.atBoundary() != (end == len(stream) || isCommandEnd(stream, end)) {
				t.Fatalf("reads of %d: between commands %v after byte %d", size, p.atBoundary(), end)
			}
		}
		if !slices.Equal(p.batch, want) {
			t.Errorf("reads of %d: commands %q, want %q", size, p.batch, want)
		}
	}
}

// isCommandEnd reports whether a command of stream (built by resp) ends at byte i.
func isCommandEnd(stream []byte, i int) bool {
	return i < len(stream) && stream[i] == '*' && i >= 2 && string(stream[i-2:i]) == "\r\n"
}

// TestRespTapCountsRoundTrips: a go-redis client through the tap to a real Redis makes
// three round trips: a command, a pipeline of three, a command; the tap counts them
// and the commands.
func TestRespTapCountsRoundTrips(t *testing.T) {
	srv := streamstest.Start(t)
	tap, err := newRespTap(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer tap.close()
	rdb := redis.NewClient(&redis.Options{Addr: tap.Addr})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil { // connects
		t.Fatal(err)
	}
	tap.take()
	if err := rdb.Set(ctx, "a", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	pipe := rdb.Pipeline()
	pipe.Incr(ctx, "a")
	pipe.Incr(ctx, "a")
	pipe.Get(ctx, "a")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, "a").Err(); err != nil {
		t.Fatal(err)
	}
	got := tap.take()
	// go-redis may open a connection again meanwhile (HELLO, CLIENT SETINFO): not ours.
	for b, n := range got.Batches {
		if strings.HasPrefix(b, "CLIENT") || strings.HasPrefix(b, "HELLO") {
			got.Writes -= n
		}
	}
	if got.Writes != 3 || got.Cmds["INCR"] != 2 || got.Cmds["GET"] != 1 || got.Cmds["SET"] != 1 || got.Cmds["DEL"] != 1 ||
		got.Batches["GET+INCR"] != 1 || got.Batches["SET"] != 1 {
		t.Errorf("counted %+v; want 3 writes: SET, GET+INCR (INCR twice), DEL", got)
	}
}
