package dedup_test

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/dedup"
	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// fingerprints returns n distinct 16-byte fingerprints, like spiders.Fingerprint's, in
// a namespace: two namespaces never share one.
func fingerprints(namespace string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		sum := sha256.Sum256([]byte(namespace + "/" + strconv.Itoa(i)))
		out[i] = sum[:16]
	}
	return out
}

func openDeduper(t *testing.T, rdb redis.UniversalClient, crawl string, cfg dedup.Config) *dedup.Deduper {
	t.Helper()
	d, err := dedup.Open(context.Background(), rdb, streams.NewLayout(crawl, 1), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func count(bs []bool, want bool) int {
	n := 0
	for _, b := range bs {
		if b == want {
			n++
		}
	}
	return n
}

func TestDedupConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     dedup.Config
		wantErr string
	}{
		{"zero is exact with defaults", dedup.Config{}, ""},
		{"bloom defaults", dedup.Config{Mode: dedup.Bloom}, ""},
		{"set", dedup.Config{Mode: dedup.Set}, ""},
		{"unknown mode", dedup.Config{Mode: "cuckoo"}, "unknown dedup mode"},
		{"negative capacity", dedup.Config{Capacity: -1}, "capacity"},
		{"error rate 1", dedup.Config{Mode: dedup.Bloom, ErrorRate: 1}, "error rate"},
		{"error rate ignored by exact", dedup.Config{ErrorRate: 7}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
	for in, want := range map[string]dedup.Mode{"": dedup.Exact, "Bloom": dedup.Bloom, " set ": dedup.Set} {
		if got, err := dedup.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseDedupMode(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
}

// TestDedupExactIsExact: never a new fingerprint reported seen, never a seen one new,
// within a batch and across batches, for 16-byte and other fingerprints.
func TestDedupExactIsExact(t *testing.T) {
	srv := streamstest.Start(t)
	ctx := context.Background()
	d := openDeduper(t, srv.Client(), "exact", dedup.Config{Capacity: 100_000})
	old := fingerprints("old", 100_000)
	got, err := d.Add(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(got, false); n != 0 {
		t.Fatalf("first Add of 100000 distinct fingerprints reported %d as seen", n)
	}
	// Old and new shuffled together, with every new one twice.
	fresh := fingerprints("new", 50_000)
	mixed := append(append(append([][]byte{}, old...), fresh...), fresh...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(mixed), func(i, j int) { mixed[i], mixed[j] = mixed[j], mixed[i] })
	got, err = d.Add(ctx, mixed)
	if err != nil {
		t.Fatal(err)
	}
	isOld := map[string]bool{}
	for _, fp := range old {
		isOld[string(fp)] = true
	}
	firstSeen := map[string]bool{}
	for i, fp := range mixed {
		want := !isOld[string(fp)] && !firstSeen[string(fp)]
		firstSeen[string(fp)] = true
		if got[i] != want {
			t.Fatalf("Add reported fingerprint %d (old=%v) new=%v, want %v", i, isOld[string(fp)], got[i], want)
		}
	}
	probes := fingerprints("never", 100_000)
	has, err := d.Has(ctx, append(probes, old[:1000]...))
	if err != nil {
		t.Fatal(err)
	}
	if n := count(has[:len(probes)], true); n != 0 {
		t.Fatalf("Has reported %d never-added fingerprints as seen", n)
	}
	if n := count(has[len(probes):], false); n != 0 {
		t.Fatalf("Has reported %d added fingerprints as not seen", n)
	}
	// Fingerprints of other lengths: exact too, and apart from 16-byte ones.
	odd := [][]byte{[]byte("a"), []byte("ab"), old[0][2:], old[0][:15], append(append([]byte{}, old[0]...), 0)}
	got, err = d.Add(ctx, append(odd, odd...))
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, true, true, true, true, false, false, false, false, false}; !equalBools(got, want) {
		t.Fatalf("Add of odd-length fingerprints twice = %v, want %v", got, want)
	}
	if _, err := d.Add(ctx, [][]byte{{}}); err == nil {
		t.Fatal("Add of an empty fingerprint: no error")
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// bloomCheck inserts n distinct fingerprints, checks there is no false negative, and
// returns the false-positive rate measured on probes never-inserted ones and how many
// of the inserted were dropped as false positives.
func bloomCheck(t *testing.T, d *dedup.Deduper, n, probes int) (rate float64, dropped int) {
	t.Helper()
	ctx := context.Background()
	in := fingerprints("in", n)
	got, err := d.Add(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	dropped = count(got, false)
	has, err := d.Has(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if fn := count(has, false); fn != 0 {
		t.Fatalf("%d of %d inserted fingerprints are not found (a Bloom filter has no false negatives)", fn, n)
	}
	has, err = d.Has(ctx, fingerprints("out", probes))
	if err != nil {
		t.Fatal(err)
	}
	return float64(count(has, true)) / float64(probes), dropped
}

func TestDedupBloomFalsePositiveRate(t *testing.T) {
	srv := streamstest.Start(t)
	const n = 200_000
	d := openDeduper(t, srv.Client(), "bloom", dedup.Config{Mode: dedup.Bloom, Capacity: n, ErrorRate: 0.01})
	rate, dropped := bloomCheck(t, d, n, n)
	wantRate, wantDropped := d.ExpectedFalsePositives(n)
	t.Logf("%s", d)
	t.Logf("false-positive rate %.3f%% (expected %.3f%%), dropped on insert %d (expected %.0f)", 100*rate, 100*wantRate, dropped, wantDropped)
	if rate > 1.2*0.01 {
		t.Fatalf("false-positive rate %.3f%%, want at most 1.2%%", 100*rate)
	}
	if rate > 1.25*wantRate || rate < 0.75*wantRate {
		t.Fatalf("false-positive rate %.3f%% is far from the sizing's %.3f%%: hashing is off", 100*rate, 100*wantRate)
	}
}

// TestDedupBloomGrowsPastCapacity: three times the planned URLs make a second filter,
// and the rate against both stays under the configured rate.
func TestDedupBloomGrowsPastCapacity(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	const capacity = 50_000
	d := openDeduper(t, rdb, "grow", dedup.Config{Mode: dedup.Bloom, Capacity: capacity, ErrorRate: 0.01})
	rate, dropped := bloomCheck(t, d, 3*capacity, 8*capacity) // expected 0.93%: 400k probes put 1% 5 sigma off
	wantRate, wantDropped := d.ExpectedFalsePositives(3 * capacity)
	t.Logf("false-positive rate %.3f%% (expected %.3f%%), dropped on insert %d (expected %.0f)", 100*rate, 100*wantRate, dropped, wantDropped)
	state := rdb.HGetAll(context.Background(), dedup.BloomKey(streams.NewKeys("grow"))).Val()
	if state["n"] != "2" {
		t.Fatalf("bloom state after 3x capacity = %v, want n=2 filters", state)
	}
	if c, _ := strconv.Atoi(state["c"]); c != 2*capacity-dropped {
		t.Fatalf("newest filter holds %d URLs, want %d (inserted %d, dropped %d, first filter %d)", c, 2*capacity-dropped, 3*capacity, dropped, capacity)
	}
	if rate > 0.01 {
		t.Fatalf("false-positive rate %.3f%% past capacity, want at most the configured 1%%", 100*rate)
	}
	u, err := d.Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if u.URLs != int64(3*capacity-dropped) {
		t.Fatalf("Usage().URLs = %d, want %d", u.URLs, 3*capacity-dropped)
	}
}

// TestDedupConfigStoredOnce: the first Deduper of a crawl fixes its config; a second
// one asking for another gets the stored one and sees the same fingerprints.
func TestDedupConfigStoredOnce(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	first := openDeduper(t, rdb, "c", dedup.Config{Capacity: 5000})
	second := openDeduper(t, rdb, "c", dedup.Config{Mode: dedup.Bloom, Capacity: 7})
	want := dedup.Config{Mode: dedup.Exact, Capacity: 5000}
	if got := second.Config(); got != want || first.Config() != want {
		t.Fatalf("configs = %+v and %+v, want both %+v", first.Config(), second.Config(), want)
	}
	if first.Lua() != second.Lua() {
		t.Fatal("two Dedupers of one crawl generate different Lua")
	}
	fps := fingerprints("x", 100)
	if _, err := first.Add(ctx, fps); err != nil {
		t.Fatal(err)
	}
	has, err := second.Has(ctx, fps)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(has, false); n != 0 {
		t.Fatalf("second Deduper misses %d fingerprints the first added", n)
	}
	if rdb.HGet(ctx, streams.NewKeys("c").Meta, "dedup").Val() == "" {
		t.Fatal("no dedup record in the crawl's meta hash")
	}
	// Another crawl on the same server has its own.
	other := openDeduper(t, rdb, "d", dedup.Config{Mode: dedup.Bloom, Capacity: 7})
	if other.Config().Mode != dedup.Bloom {
		t.Fatalf("crawl d got %+v, want bloom", other.Config())
	}
}

// TestDedupKeepsLegacySet: a crawl whose seen key is a set from before dedup modes keeps
// it (set mode) and so still knows what it has seen.
func TestDedupKeepsLegacySet(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	k := streams.NewKeys("legacy")
	fps := fingerprints("x", 10)
	for _, fp := range fps {
		rdb.SAdd(ctx, k.Seen, fp)
	}
	d := openDeduper(t, rdb, "legacy", dedup.Config{})
	if d.Config().Mode != dedup.Set {
		t.Fatalf("mode = %q, want set", d.Config().Mode)
	}
	got, err := d.Add(ctx, append(fps[:2], fingerprints("y", 1)...))
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{false, false, true}; !equalBools(got, want) {
		t.Fatalf("Add = %v, want %v", got, want)
	}
}

// TestDedupBytesPerURL measures Redis memory per URL for each mode at capacity, by
// MEMORY USAGE of the dedup keys and by used_memory, and holds exact to 40 bytes and
// bloom to 1.4 bytes.
func TestDedupBytesPerURL(t *testing.T) {
	ctx := context.Background()
	const n = 200_000
	tests := []struct {
		mode dedup.Mode
		max  float64
	}{
		{dedup.Exact, 40},
		{dedup.Bloom, 1.4},
		{dedup.Set, 100},
	}
	fps := fingerprints("bytes", n)
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			rdb := streamstest.Start(t).Client() // a server of its own: nothing else moves used_memory
			// Warm up a crawl with the same config (same scripts, client buffers) so that
			// used_memory counts the dedup keys only.
			cfg := dedup.Config{Mode: tt.mode, Capacity: n}
			warm := openDeduper(t, rdb, "warm-"+string(tt.mode), cfg)
			if _, err := warm.Add(ctx, fingerprints("warm", 1000)); err != nil {
				t.Fatal(err)
			}
			if _, err := dedup.Delete(ctx, rdb, streams.NewKeys("warm-"+string(tt.mode))); err != nil {
				t.Fatal(err)
			}
			before := streamstest.UsedMemory(t, rdb)
			d := openDeduper(t, rdb, "bytes-"+string(tt.mode), cfg)
			if _, err := d.Add(ctx, fps); err != nil {
				t.Fatal(err)
			}
			delta := streamstest.UsedMemory(t, rdb) - before
			u, err := d.Usage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			perURL := float64(u.Bytes) / n
			t.Logf("%s: %.2f bytes/URL by MEMORY USAGE (%d keys, %d URLs), %.2f by used_memory; %s",
				tt.mode, perURL, u.Keys, u.URLs, float64(delta)/n, d)
			if perURL > tt.max {
				t.Fatalf("%.2f bytes per URL, want at most %.1f", perURL, tt.max)
			}
			if tt.mode != dedup.Bloom && u.URLs != n {
				t.Fatalf("Usage().URLs = %d, want %d", u.URLs, n)
			}
			deleted, err := dedup.Delete(ctx, rdb, streams.NewKeys("bytes-"+string(tt.mode)))
			if err != nil || deleted != u.Keys {
				t.Fatalf("DeleteSeen = %d, %v, want %d keys", deleted, err, u.Keys)
			}
			if u, _ := d.Usage(ctx); u.Keys != 0 {
				t.Fatalf("%d dedup keys left after DeleteSeen", u.Keys)
			}
		})
	}
}

// TestDedupOnEmbeddedRedis: single-machine mode runs on miniredis, which has Lua but no
// BITFIELD, CONFIG or MEMORY: exact and set modes work there, bloom mode says why not.
func TestDedupOnEmbeddedRedis(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	fps := fingerprints("e", 500)
	for _, mode := range []dedup.Mode{dedup.Exact, dedup.Set} {
		d := openDeduper(t, rdb, "embedded-"+string(mode), dedup.Config{Mode: mode, Capacity: 1000})
		got, err := d.Add(ctx, append(fps, fps[:100]...))
		if err != nil {
			t.Fatal(err)
		}
		if count(got[:500], false) != 0 || count(got[500:], true) != 0 {
			t.Fatalf("%s: Add on embedded Redis got %d new of 500 then %d new of 100 repeats", mode, count(got[:500], true), count(got[500:], true))
		}
		if u, err := d.Usage(ctx); err != nil || u.URLs != 500 {
			t.Fatalf("%s: Usage = %+v, %v, want 500 URLs", mode, u, err)
		}
	}
	_, err := dedup.Open(ctx, rdb, streams.NewLayout("embedded-bloom", 1), dedup.Config{Mode: dedup.Bloom}, nil)
	if err == nil || !strings.Contains(err.Error(), "BITFIELD_RO") || !strings.Contains(err.Error(), "exact") {
		t.Fatalf("bloom on embedded Redis: err = %v, want one naming BITFIELD_RO and exact dedup", err)
	}
}

// The frontier hands exact-mode fingerprints to its script already split into bucket
// and field; they must land where the Deduper's own scripts look, and the reverse.
func TestFrontierAndDeduperAgreeOnExactBuckets(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	k := streams.NewKeys("agree")
	d := openDeduper(t, rdb, "agree", dedup.Config{Capacity: 50_000})
	f, err := frontier.New(frontier.Config{Client: rdb, Layout: streams.NewLayout(k.Crawl, 1), Dedup: d, SeenCache: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(context.Background())
	viaFrontier := append(fingerprints("frontier", 500), []byte("short-fp"), []byte("a-fingerprint-of-20b"))
	viaDeduper := fingerprints("deduper", 500)
	var cands []frontier.Candidate
	for i, fp := range viaFrontier {
		cands = append(cands, frontier.Candidate{Fingerprint: fp, Payload: []byte("r" + strconv.Itoa(i))})
	}
	if n, err := enqueueAll(ctx, f, cands); err != nil || n != len(cands) {
		t.Fatalf("queued %d, %v; want %d", n, err, len(cands))
	}
	if got, err := d.Has(ctx, viaFrontier); err != nil || count(got, true) != len(viaFrontier) {
		t.Fatalf("Deduper sees %d of the %d fingerprints the frontier queued (%v)", count(got, true), len(viaFrontier), err)
	}
	if _, err := d.Add(ctx, viaDeduper); err != nil {
		t.Fatal(err)
	}
	cands = cands[:0]
	for i, fp := range append(viaDeduper, viaFrontier...) {
		cands = append(cands, frontier.Candidate{Fingerprint: fp, Payload: []byte("again" + strconv.Itoa(i))})
	}
	e, err := f.Emit(ctx, 0, cands, nil)
	if err != nil || e.Requests != 0 || e.DuplicateRequests != len(cands) {
		t.Fatalf("re-emit of %d known fingerprints: %+v, %v; want all duplicates", len(cands), e, err)
	}
}

// enqueueAll queues cands (Emit without items) and returns how many it queued.
func enqueueAll(ctx context.Context, f *frontier.Frontier, cands []frontier.Candidate) (int, error) {
	e, err := f.Emit(ctx, 0, cands, nil)
	return e.Requests, err
}
