package fetch

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// BenchmarkFetch32Pages10MB runs the fetch stage's work (fetch, encode) on 32 requests at once for
// 10 MB HTML pages (loopback) and reports the process's peak RSS (VmHWM). Run it alone:
//
//	go test ./handlers/fetch/ -run '^$' -bench Fetch32Pages10MB -benchtime 3x
func BenchmarkFetch32Pages10MB(b *testing.B) {
	var page bytes.Buffer
	for i := 0; page.Len() < 10<<20; i++ {
		fmt.Fprintf(&page, "<div class=\"product\"><a href=\"/p/%d\">product %d</a><span class=\"price\">%d.99</span></div>\n", i, i, i%997)
	}
	body := page.Bytes()[:10<<20]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	defer srv.Close()
	rs := streamstest.Start(b)
	rdb := rs.Client()
	layout := streams.NewLayout("mem", 1)
	hosts, err := frontier.New(frontier.Config{Client: rdb, Layout: layout})
	if err != nil {
		b.Fatal(err)
	}
	defer hosts.Close(context.Background())
	allow, robots := true, false
	budget := spiders.ByteSize(0)
	if v := os.Getenv("BODY_BUDGET"); v != "" {
		if budget, err = spiders.ParseByteSize(v); err != nil {
			b.Fatal(err)
		}
	}
	f, err := New(Config{Settings: spiders.Settings{AllowPrivateNetworks: allow, ObeyRobots: &robots,
		PerHostConcurrency: -1, Concurrency: 32, BodyBudget: budget}, Frontier: hosts})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		var wg sync.WaitGroup
		for i := 0; i < 32; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// What the fetch stage does with a request: fetch, encode, release.
				res, err := f.Do(context.Background(), &spiders.Request{URL: srv.URL + "/" + strconv.Itoa(i)}, Delivery{})
				if err == nil && res.Outcome == Publish {
					_, err = wire.Marshal(res.Response)
				}
				res.Release()
				if err != nil || res.Outcome != Publish {
					b.Errorf("fetch: %v (outcome %d)", err, res.Outcome)
				}
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	_, peak := f.budget.usage()
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-body-budget-MiB")
	b.ReportMetric(float64(f.budget.limit)/(1<<20), "body-budget-MiB")
}

// peakRSS reads VmHWM from /proc/self/status (0 when it cannot).
func peakRSS() int64 {
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
