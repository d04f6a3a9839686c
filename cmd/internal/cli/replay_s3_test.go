package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/processors/warcs3/warcs3test"
	"github.com/streamcrawl/streamcrawl/spiders/demosite"
)

// TestReplayFromBucketErrors: a replay from an s3:// prefix that holds no WARC file, a
// bucket that does not exist, or a server that is down, says so and exits 1. (A replay
// of a real archive from a bucket is TestArchiverKilledWritesEveryRecordOnce's s3 cases.)
func TestReplayFromBucketErrors(t *testing.T) {
	t.Parallel()
	srv := warcs3test.Start(t)
	spider := writeFile(t, "shop.yaml", demosite.New(10).SpiderYAML("shop", "http://127.0.0.1:1/"))
	down := warcs3test.Start(t)
	down.Close()
	for _, c := range []struct {
		target, endpoint, want string
	}{
		{"s3://" + srv.Bucket + "/nothing/here", srv.URL, `no .warc.gz files in ["s3://` + srv.Bucket + `/nothing/here"]`},
		{"s3://no-such-bucket/x", srv.URL, "warcs3: bucket no-such-bucket at " + srv.URL + " does not exist"},
		{"s3://" + down.Bucket + "/x", down.URL, "warcs3: bucket " + down.Bucket + " at " + down.URL + ":"},
	} {
		code, _, stderr := runCLI(t, 30*time.Second, srv.Env(), "replay", "--stage", "parse", "--from-warc", "--spider", spider,
			"--out", t.TempDir()+"/out.jsonl", c.target, "--s3-endpoint", c.endpoint, "--s3-path-style")
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("replay from %s at %s: exit %d, stderr %q; want exit 1 and %q", c.target, c.endpoint, code, stderr, c.want)
		}
	}
}
