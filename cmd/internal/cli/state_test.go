package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// layoutOf reads the crawl's stored layout.
func layoutOf(t testing.TB, rdb redis.UniversalClient, crawl string) streams.Layout {
	t.Helper()
	l, err := streams.ReadLayout(context.Background(), rdb, crawl)
	if err != nil {
		t.Fatalf("read layout: %v", err)
	}
	return l
}

// readStatus reads the crawl's status straight from Redis.
func readStatus(t testing.TB, rdb redis.UniversalClient, crawl string) *inspect.Status {
	t.Helper()
	st, err := inspect.ReadStatus(context.Background(), rdb, layoutOf(t, rdb, crawl))
	if err != nil {
		t.Fatalf("read status: %v", err)
	}
	return st
}

// logStatus logs the crawl's status, for failures.
func logStatus(t testing.TB, rdb redis.UniversalClient, crawl string) {
	l, err := streams.ReadLayout(context.Background(), rdb, crawl)
	if err != nil {
		t.Logf("layout: %v", err)
		return
	}
	st, err := inspect.ReadStatus(context.Background(), rdb, l)
	if err != nil {
		t.Logf("status: %v", err)
		return
	}
	var b bytes.Buffer
	printStatus(&b, st)
	t.Logf("status of crawl %s:\n%s", crawl, b.String())
}

// checkFinished asserts that every stage group of the crawl exists with nothing
// pending and nothing unread, and that the crawl reports done.
func checkFinished(t testing.TB, rdb redis.UniversalClient, crawl string) *inspect.Status {
	t.Helper()
	st := readStatus(t, rdb, crawl)
	l := layoutOf(t, rdb, crawl)
	k := l.Parts[0]
	for i, sg := range []struct{ Stream, Group string }{{k.Requests, streams.StageFetch}, {k.Responses, streams.StageParse}, {k.Items, streams.StageStore}} {
		found := false
		for _, s := range st.Streams[i : i+1] { // the stream summed over the partitions
			for _, g := range s.Groups {
				if g.Name == sg.Group {
					found = true
					if g.Pending != 0 {
						t.Errorf("group %s of %s has %d pending, want 0", g.Name, s.Name, g.Pending)
					}
				}
			}
		}
		if !found {
			t.Errorf("group %s of %s is missing", sg.Group, sg.Stream)
		}
	}
	p, err := inspect.ReadProgress(context.Background(), rdb, l)
	if err != nil {
		t.Fatalf("read progress: %v", err)
	}
	if !p.Done() || !st.Done {
		t.Errorf("crawl not done: progress %+v, status done=%v", p, st.Done)
	}
	if t.Failed() {
		logStatus(t, rdb, crawl)
	}
	return st
}

// deadLetterPaths returns path?query of each request in the dead-letter stream, by
// stage, relative to base ("http://host:port/").
func deadLetterPaths(t testing.TB, rdb redis.UniversalClient, crawl, base string) map[string]int {
	t.Helper()
	entries, err := inspect.ListDead(context.Background(), rdb, layoutOf(t, rdb, crawl), 1<<30)
	if err != nil {
		t.Fatalf("read dead letters: %v", err)
	}
	out := map[string]int{}
	origin := strings.TrimSuffix(base, "/")
	for _, e := range entries {
		desc := "stage=" + e.Stage + " "
		if r, err := spiders.UnmarshalRequest([]byte(e.Fields["payload"])); err == nil {
			desc += strings.TrimPrefix(r.URL, origin)
		} else {
			desc += fmt.Sprintf("undecodable entry %s (%v): %v", e.ID, err, e.Error)
		}
		out[desc]++
	}
	return out
}

// prefixed returns the keys of m with prefix added.
func prefixed(prefix string, m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[prefix+k] = v
	}
	return out
}

// statInt reads a field of the crawl's stats hash (0 when absent).
func statInt(t testing.TB, rdb redis.UniversalClient, crawl, field string) int64 {
	t.Helper()
	v, err := rdb.HGet(context.Background(), streams.NewKeys(crawl).Stats, field).Int64()
	if err != nil && err != redis.Nil {
		t.Fatalf("stats %s: %v", field, err)
	}
	return v
}

// xlen returns the length of a stream.
func xlen(t testing.TB, rdb redis.UniversalClient, stream string) int64 {
	t.Helper()
	n, err := rdb.XLen(context.Background(), stream).Result()
	if err != nil {
		t.Fatalf("XLEN %s: %v", stream, err)
	}
	return n
}
