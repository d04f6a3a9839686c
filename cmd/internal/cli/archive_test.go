package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/processors/warc"
	"github.com/streamcrawl/streamcrawl/processors/warc/warctest"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams"
)

// TestArchiverKilledWritesEveryRecordOnce: an archiver dies abruptly mid-crawl, either
// right before acking its 100th response, whose records are already on disk (the fault
// hook exits 137, like kill -9, at the worst moment), or by a real kill -9 wherever its
// writing is; restarted on the same directory it archives the rest of the crawl: one
// response record per fetched page, none twice, none missing, in files rotated by size,
// and a replay from them gives the crawl's items. The s3 cases archive to a bucket (an
// S3 server in the test process) through a spool directory; the records are read back
// from the bucket, by our reader and by warcio.
func TestArchiverKilledWritesEveryRecordOnce(t *testing.T) {
	t.Parallel()
	beforeAck := func(t *testing.T, args, env []string, _ func() int) *proc {
		first := startProc(t, "archive-1", append(env, faultEnv+"=archive:100"), args...)
		if code, ok := first.Wait(crawlTimeout); !ok || code != 137 || !strings.Contains(first.Stderr(), "crashing before ack #100") {
			t.Fatalf("archiver did not crash at ack 100: exit %d (exited %v)", code, ok)
		}
		return first
	}
	kill9 := func(t *testing.T, args, env []string, files func() int) *proc {
		first := startProc(t, "archive-1", env, args...)
		// Killed once it has written two files' worth, while it writes more.
		for deadline := time.Now().Add(crawlTimeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if files() >= 2 {
				break
			}
		}
		first.Kill()
		return first
	}
	for _, s3 := range []bool{false, true} {
		name := ""
		if s3 {
			name = "s3-"
		}
		t.Run(name+"before-ack", func(t *testing.T) {
			t.Parallel()
			testArchiverKilled(t, s3, beforeAck)
		})
		t.Run(name+"kill-9", func(t *testing.T) {
			t.Parallel()
			testArchiverKilled(t, s3, kill9)
		})
	}
}

// testArchiverKilled runs a crawl of the demo shop with an archiver that kill stops
// abruptly (files counts the archive's files so far), then a restarted archiver on the
// same directory (or spool and bucket), and checks the archive, then a replay from it
// (from the bucket itself in the s3 cases).
func testArchiverKilled(t *testing.T, s3 bool, kill func(t *testing.T, args, env []string, files func() int) *proc) {
	site := demosite.New(300)
	c := newCluster(t, "arch", site)
	// A zstd level, so that responses are compressed with the crawl's dictionary (the
	// default for responses not retained once parsed is S2, which has none).
	c.addSetting("response_compression: fastest")
	publishShopDict(t, c.rdb, "arch")
	c.seed() // the crawl exists once seeded; the group is made before any page is fetched
	if code, stdout, stderr := runCLI(t, 30*time.Second, nil, "archive", "--create-group", "--redis", c.srv.URL(), "--crawl", "arch"); code != 0 {
		t.Fatalf("archive --create-group: exit %d, %s %s", code, stdout, stderr)
	}
	procs := c.start(1, 1, 1)
	dir := t.TempDir()
	out := dir
	var bucket *s3Bucket
	if s3 {
		bucket = startBucket(t, "crawls/arch")
		out = "s3://" + bucket.srv.Bucket + "/crawls/arch"
	}
	args := []string{"archive", "--until-done", "--redis", c.srv.URL(), "--crawl", "arch", "--out", out,
		"--consumer", "archive-1", "--max-file-size", "150KB"}
	var env []string
	count := func() int { files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz")); return len(files) }
	if s3 {
		args = append(args, "--spool", dir, "--s3-endpoint", bucket.srv.URL, "--s3-path-style")
		env = bucket.srv.Env()
		count = bucket.count
	}
	kill(t, args, env, count)
	second := startProc(t, "archive-1(start 2)", env, args...)
	waitAll(t, crawlTimeout, c.rdb, "arch", append(procs, second)...)
	for _, p := range append(procs, second) {
		if p.code != 0 {
			t.Fatalf("%s exited %d", p.name, p.code)
		}
	}
	if s3 {
		if left, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz")); len(left) != 0 {
			t.Fatalf("spool holds %d files once the archiver is done, want 0 (all uploaded)", len(left))
		}
		dir = bucket.download(t)
	}
	counts := map[string]int{}
	where := map[string][]string{} // file and record ID of each response record
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	records := 0
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := warc.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			records++
			if rec.Type() == warc.TypeResponse {
				uri := rec.Header[warc.FieldTargetURI]
				counts[uri]++
				where[uri] = append(where[uri], filepath.Base(name)+" "+rec.ID())
			}
		}
		f.Close()
	}
	fetched, _ := strconv.Atoi(c.rdb.HGet(t.Context(), streams.NewKeys("arch").Stats, "pages_fetched").Val())
	// Every response was stored compressed with the crawl's dictionary (published before
	// the crawl): the archiver and the parser, other processes, loaded it to read them.
	if n, _ := strconv.Atoi(c.rdb.HGet(t.Context(), streams.NewKeys("arch").Stats, "responses_dict_encoded").Val()); n != fetched {
		t.Errorf("%d responses compressed with the crawl's dictionary, want all %d", n, fetched)
	}
	twice := 0
	for uri, n := range counts {
		if n > 1 {
			twice++
			t.Errorf("%s archived %d times: %v", uri, n, where[uri])
		}
	}
	if len(counts) != fetched || records != 2*fetched || len(files) < 2 {
		t.Fatalf("%d pages archived (%d records in %d files), %d fetched; want every fetched page once, rotated",
			len(counts), records, len(files), fetched)
	}
	t.Log(fmt.Sprintf("%d pages archived once each in %d files across a crash", fetched, len(files)))
	if s3 {
		// The independent reader agrees on the files read back from the bucket.
		resp := 0
		for _, r := range warctest.Warcio(t, files...) {
			if r.Type == "response" {
				resp++
			}
		}
		if resp != fetched {
			t.Fatalf("warcio read %d response records from the bucket, want %d", resp, fetched)
		}
	}

	// Replay from the archive, with Redis gone: the crawl's items exactly. The s3 cases
	// read the files straight from the bucket.
	c.srv.Kill()
	out = filepath.Join(t.TempDir(), "replay.jsonl")
	from, renv := []string{dir}, []string(nil)
	if s3 {
		from = []string{"s3://" + bucket.srv.Bucket + "/crawls/arch", "--s3-endpoint", bucket.srv.URL, "--s3-path-style"}
		renv = bucket.srv.Env()
	}
	code, stdout, stderr := runCLI(t, crawlTimeout, renv, append([]string{"replay", "--stage", "parse", "--from-warc", "--spider", c.spider, "--out", out}, from...)...)
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("replay of %d WARC files: %d pages", len(files), fetched)) {
		t.Fatalf("replay --from-warc: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	want, got := jsonlByKey(t, c.out), jsonlByKey(t, out)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("replay wrote %d items, the crawl %d", len(got), len(want))
	}
	twins := 0
	for k, w := range want {
		g := got[k]
		if g == w {
			continue
		}
		// The shop's tracking-parameter twins (p/1 and p/1?utm_source=...) yield the same
		// item; which of them gave it first depends on the order pages were parsed in, so
		// its _url and _crawled_at may be the twin's. Everything else must be equal.
		if sameItemButPage(t, w, g) {
			twins++
			continue
		}
		t.Fatalf("item %s (-want +got):\n-%s\n+%s", k, w, g)
	}
	t.Logf("%d items equal, %d of them from the other twin page", len(want), twins)
}

// sameItemButPage reports whether two item lines differ only in the page they came from
// (_url, _crawled_at), that page being a tracking-parameter twin of the other.
func sameItemButPage(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y map[string]any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	ux, _ := x["_url"].(string)
	uy, _ := y["_url"].(string)
	if strings.Split(ux, "?")[0] != strings.Split(uy, "?")[0] {
		return false
	}
	for _, f := range []string{"_url", "_crawled_at"} {
		delete(x, f)
		delete(y, f)
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// jsonlByKey maps each line of a JSONL file of items to its _key.
func jsonlByKey(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var it struct {
			Key string `json:"_key"`
		}
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		out[it.Key] = line
	}
	return out
}
