package frontier_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// The frontier's per-page scripts on a real redis-server, with the Redis side of their
// cost reported per op: redis-µs/op (the server's CPU) and cmds/op (commands it ran,
// those run from Lua included). Run with -benchmem; compare builds with benchstat.

// redisCost reads the server's CPU seconds and commands processed.
func redisCost(b *testing.B, rdb redis.UniversalClient) (cpu, cmds float64) {
	b.Helper()
	info, err := rdb.Info(context.Background(), "cpu", "stats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f, _ := strconv.ParseFloat(v, 64)
		switch k {
		case "used_cpu_user", "used_cpu_sys":
			cpu += f
		case "total_commands_processed":
			cmds = f
		}
	}
	return cpu, cmds
}

// scriptCost reads the script calls (EVALSHA) the server ran and the µs they took, the
// commands they ran included.
func scriptCost(b *testing.B, rdb redis.UniversalClient) (calls, usec float64) {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				calls = f
			case "usec":
				usec = f
			}
		}
	}
	return calls, usec
}

// reportRedis adds the Redis cost since (cpu0, cmds0) per op to b's results.
func reportRedis(b *testing.B, rdb redis.UniversalClient, cpu0, cmds0 float64) {
	cpu, cmds := redisCost(b, rdb)
	b.ReportMetric((cpu-cpu0)*1e6/float64(b.N), "redis-µs/op")
	b.ReportMetric((cmds-cmds0)/float64(b.N), "cmds/op")
}

// BenchmarkEmitPage emits what one parsed page of a shop yields: 70 links of which 2
// are new (the rest seen before, as most links of a crawl are, and known so in
// process) and 1 item, to a host with the default per-host limit (8): new requests wait
// in the host's queue. 16 parse goroutines emit at once, as a parse stage does.
func BenchmarkEmitPage(b *testing.B) { benchEmitPage(b, frontier.HostBudget{}) }

// BenchmarkEmitPageWithBudget is BenchmarkEmitPage with a per-host budget that the
// pages never reach: what counting the host's requests costs.
func BenchmarkEmitPageWithBudget(b *testing.B) {
	benchEmitPage(b, frontier.HostBudget{Pages: 1 << 40})
}

func benchEmitPage(b *testing.B, budget frontier.HostBudget) {
	rdb := streamstest.Start(b).Client()
	ctx := context.Background()
	k := streams.NewKeys("emit")
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		b.Fatal(err)
	}
	hosts := frontier.HostRule{Concurrency: 8}
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Hosts: hosts, Window: 16, EmitHandsOut: true, Budget: budget})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close(context.Background())
	payload := func(i int) []byte {
		return []byte(fmt.Sprintf(`{"v":1,"url":"http://shop.test/p/%d","depth":1}`, i))
	}
	page := func(n int) ([]frontier.Candidate, []frontier.ItemOut) {
		cands := make([]frontier.Candidate, 70)
		for j := range cands {
			id := j // seen before
			if j < 2 {
				id = 1000 + 2*n + j // new
			}
			cands[j] = frontier.Candidate{Fingerprint: []byte(fmt.Sprintf("fp-%08d", id)), Payload: payload(id), Host: "shop.test", Depth: 1}
		}
		items := []frontier.ItemOut{{Key: []byte(fmt.Sprintf("item-%08d", n)), Payload: []byte(`{"type":"product","name":"x","price":"$1"}`)}}
		return cands, items
	}
	warm, _ := page(-500)
	if _, err := f.Emit(ctx, 0, warm, nil); err != nil { // the 68 old links are seen
		b.Fatal(err)
	}
	pages := make([][]frontier.Candidate, b.N)
	items := make([][]frontier.ItemOut, b.N)
	for i := range pages {
		pages[i], items[i] = page(i)
	}
	var next atomic.Int64
	cpu0, cmds0 := redisCost(b, rdb)
	b.ReportAllocs()
	b.SetParallelism(8) // 16 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			if _, err := f.Emit(ctx, 0, pages[i], items[i]); err != nil {
				b.Error(err)
			}
		}
	})
	b.StopTimer()
	reportRedis(b, rdb, cpu0, cmds0)
}

// BenchmarkHostTurns is the per-request cost of the host frontier on the default
// per-host settings: 8 fetchers each finish their turn at a host with 8 slots (giving
// the slot back) and a dispatch round hands the next 8 requests out, with leases. One op
// is one request's turn.
func BenchmarkHostTurns(b *testing.B) { benchHostTurns(b, 8, false) }

// BenchmarkFinishTurns is a crawl's finish: the finishes of the turns in flight at one
// host (its concurrency 1, 8 or 32) share one script call, which hands the host's next
// requests out itself (FinishHandsOut). redis-µs/call is what one call costs Redis,
// so the calls at 1, 8 and 32 turns give a call's fixed cost and its cost per turn.
func BenchmarkFinishTurns(b *testing.B) {
	for _, conc := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) { benchHostTurns(b, conc, true) })
	}
}

// benchHostTurns runs turns at one host of concurrency conc, the finishes handing the
// next requests out (handsOut) or a dispatch round doing it.
func benchHostTurns(b *testing.B, conc int, handsOut bool) {
	rdb := streamstest.Start(b).Client()
	ctx := context.Background()
	k := streams.NewKeys("turns")
	if err := rdb.XGroupCreateMkStream(ctx, k.Requests, streams.StageFetch, "$").Err(); err != nil {
		b.Fatal(err)
	}
	hosts := frontier.HostRule{Concurrency: conc}
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), SeenCache: -1, Hosts: hosts, Window: 64, EmitHandsOut: true})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close(context.Background())
	n := b.N + 8
	for i := 0; i < n; i += 1000 {
		var cs []frontier.Candidate
		for j := i; j < min(i+1000, n); j++ {
			cs = append(cs, frontier.Candidate{Fingerprint: []byte(fmt.Sprintf("t-%08d", j)),
				Payload: []byte(fmt.Sprintf(`{"v":1,"url":"http://shop.test/p/%d"}`, j)), Host: "shop.test"})
		}
		if _, err := enqueue(ctx, f, cs); err != nil {
			b.Fatal(err)
		}
	}
	d, err := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Window: 64, Hosts: hosts})
	if err != nil {
		b.Fatal(err)
	}
	hcfg := frontier.Config{Client: rdb, Layout: streams.NewLayout("turns", 1), Hosts: hosts}
	if handsOut {
		hcfg.Window, hcfg.FinishHandsOut = 4*conc, true
	}
	h, err := frontier.New(hcfg)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close(context.Background())
	read := func() []redis.XMessage {
		res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: streams.StageFetch, Consumer: "f",
			Streams: []string{k.Requests, ">"}, Count: int64(max(64, 4*conc)), Block: -1}).Result()
		if err == redis.Nil {
			return nil
		}
		if err != nil {
			b.Fatal(err)
		}
		return res[0].Messages
	}
	out := read()
	calls0, usec0 := scriptCost(b, rdb)
	cpu0, cmds0 := redisCost(b, rdb)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		if len(out) == 0 {
			if _, err := d.Dispatch(ctx); err != nil {
				b.Fatal(err)
			}
			if out = read(); len(out) == 0 {
				b.Fatalf("nothing handed out after %d turns", done)
			}
		}
		var wg sync.WaitGroup
		for _, m := range out {
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				if _, err := h.Finish(ctx, frontier.Finish{Host: "shop.test", Lease: id, Started: time.Now()}); err != nil {
					b.Error(err)
				}
			}(m.ID)
		}
		wg.Wait()
		done += len(out)
		out = read() // what the finishes handed out themselves, if they do
	}
	b.StopTimer()
	reportRedis(b, rdb, cpu0, cmds0)
	if calls, usec := scriptCost(b, rdb); handsOut && calls > calls0 {
		b.ReportMetric((usec-usec0)/(calls-calls0), "redis-µs/call")
	}
}
