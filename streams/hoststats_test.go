package streams_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestHostStatsWriteOnlyTheSlowestAndFailingHosts: of 100 hosts fetched, the figures in
// Redis hold the 20 slowest and 20 of the 30 that failed, nothing of the others (one
// crawl-wide hash grew by three fields per host before), in the host's partition.
func TestHostStatsWriteOnlyTheSlowestAndFailingHosts(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	layout := streams.NewLayout("hs", 2)
	hs := streams.NewHostStats(context.Background(), rdb, layout)
	for i := 0; i < 100; i++ {
		for r := 0; r < 3; r++ {
			hs.Add(fmt.Sprintf("h%02d", i), time.Duration(i+1)*time.Millisecond, i < 30 && r == 0)
		}
	}
	_ = hs.Close(context.Background())
	got, err := streams.ReadHostStats(ctx, rdb, layout, 2)
	if err != nil {
		t.Fatal(err)
	}
	failing := 0
	for host, f := range got {
		if f.Failures > 0 {
			failing++
		}
		if f.Requests != 3 {
			t.Errorf("%s: %d requests, want 3", host, f.Requests)
		}
	}
	if len(got) != 40 || failing != 20 || got["h99"] == nil || got["h80"] == nil || got["h50"] != nil {
		t.Fatalf("%d hosts written (%d failing), h99 %v, h80 %v, h50 %v: want 40 (the 20 slowest, h80-h99, and 20 failing)",
			len(got), failing, got["h99"], got["h80"], got["h50"])
	}
	if got["h99"].MS != 300 {
		t.Errorf("h99 took %d ms in all, want 300", got["h99"].MS)
	}
	// Each host's figures are in its own partition.
	window := time.Now().Unix() / int64(streams.HostStatsWindow/time.Second)
	for _, host := range []string{"h99", "h80"} {
		key := streams.HostStatsKey(layout.ForHost(host), window)
		if rdb.HExists(ctx, key, host+"|n").Val() == false && rdb.HExists(ctx, streams.HostStatsKey(layout.ForHost(host), window-1), host+"|n").Val() == false {
			t.Errorf("%s's figures are not in its partition's hash %s", host, key)
		}
	}
}

// TestHostStatsCountAtMostTenThousandHostsAWindow: a process counts at most 10,000
// hosts a window; a slower host beyond them is not counted (its memory stays bounded).
func TestHostStatsCountAtMostTenThousandHostsAWindow(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	layout := streams.NewLayout("hsmax", 1)
	hs := streams.NewHostStats(context.Background(), rdb, layout)
	for i := 0; i < 10_000; i++ {
		hs.Add(fmt.Sprintf("h%05d", i), time.Millisecond, false)
	}
	for r := 0; r < 3; r++ {
		hs.Add("late", time.Second, true)
	}
	_ = hs.Close(context.Background())
	got, err := streams.ReadHostStats(context.Background(), rdb, layout, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got["late"] != nil {
		t.Fatalf("the 10,001st host was counted: %+v", got["late"])
	}
}
