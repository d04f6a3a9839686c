package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/processors/warc"
	"github.com/streamcrawl/streamcrawl/processors/warcs3"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// defaultSpool is the spool directory of an archiver writing to S3 when --spool is not
// given: in the user's cache directory (kept across reboots, unlike /tmp), per crawl and
// group, so that a restarted archiver finds the files its predecessor left.
func defaultSpool(crawl, group string) string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "streamcrawl", "spool", crawl+"-"+group)
}

func (a *App) archiveCommand() *cobra.Command {
	var f RunFlags
	var crawl, dir, group string
	var maxFile spiders.ByteSize
	var maxFileStr string
	var create bool
	var s3c warcs3.Config
	var spool string
	cmd := &cobra.Command{
		Use:   "archive --redis URL --crawl NAME --out DIR|s3://BUCKET/PREFIX [--max-file-size 1GB] [--until-done]",
		Short: "Archive the crawl's responses to WARC files: a consumer group of its own on the responses stream",
		Long: `archive joins the crawl's responses stream(s) with a consumer group of its own (default
"archive") and writes every response as a WARC 1.1 request and response record, one gzip
member per record, to files in --out rotated by size. Archivers started with the same
--group share the work; each writes its own files. A response is acked only after its
records are on disk; a restarted archiver reads the files in --out, cuts a torn tail and
writes no page twice. Responses leave Redis once every group has acked them: run
"archive --create-group" (or start the archiver) before the crawl to archive every page.

With --out s3://BUCKET/PREFIX the files are written to a local spool directory (--spool)
the same way, and each file is uploaded once rotated (the last one at exit), then removed
from the spool. Endpoint, region and credentials come from the --s3-* flags or the usual
AWS_ENDPOINT_URL(_S3), AWS_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
AWS_SESSION_TOKEN variables (or ~/.aws/credentials); --s3-path-style for MinIO-like
servers. A restarted archiver uploads what its spool holds first and writes no page the
bucket holds already.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := checkCrawl(crawl); err != nil {
				return err
			}
			if dir == "" && !create {
				return fmt.Errorf("--out DIR is required")
			}
			if maxFileStr != "" {
				var err error
				if maxFile, err = spiders.ParseByteSize(maxFileStr); err != nil {
					return err
				}
			}
			var store *warcs3.Store
			if warcs3.IsURL(dir) && !create {
				var err error
				if s3c.Bucket, s3c.Prefix, err = warcs3.ParseURL(dir); err != nil {
					return err
				}
				if store, err = warcs3.New(ctx, s3c); err != nil {
					return err
				}
				if spool == "" {
					spool = defaultSpool(crawl, group)
				}
				dir = spool
			}
			rdb, err := a.connectExisting(ctx, []string{crawl}, true)
			if err != nil {
				return err
			}
			defer rdb.Close()
			layout, err := streams.ReadLayout(ctx, rdb, crawl)
			if err != nil {
				return err
			}
			if err := handlers.EnsureArchiveGroup(ctx, rdb, layout, group); err != nil {
				return err
			}
			if create {
				fmt.Fprintf(a.Stdout, "group %s ready on the responses of %s\n", group, crawl)
				return nil
			}
			ac := handlers.ArchiveConfig{Client: rdb, Crawl: crawl, Dir: dir, Upload: store, MaxFileSize: int64(maxFile), Group: group,
				UntilDone: f.UntilDone, Consumer: f.consumer, Subscriber: f.subscriber(), Logger: a.Log}
			return a.runGroupReader(ctx, "archive", &ac.BeforeAck, func() error { return handlers.Archive(ctx, ac) })
		},
	}
	a.crawlFlags(cmd, &crawl)
	a.redisWaitFlag(cmd)
	f.AddConsumer(cmd, false)
	fl := cmd.Flags()
	fl.StringVar(&dir, "out", "", "directory of the WARC files, or s3://BUCKET/PREFIX (required)")
	fl.StringVar(&spool, "spool", "", "with an s3:// --out: local directory of the files not yet uploaded (default in the user's cache dir, per crawl and group)")
	s3Flags(fl, &s3c)
	fl.StringVar(&group, "group", handlers.DefaultArchiveGroup, "consumer group of the archivers")
	fl.StringVar(&maxFileStr, "max-file-size", "", fmt.Sprintf("start a new file past this size (default %s)", spiders.ByteSize(warc.DefaultMaxFileSize)))
	fl.BoolVar(&create, "create-group", false, "only create the group (before the crawl, so no response is trimmed unarchived) and exit")
	fl.BoolVar(&f.UntilDone, "until-done", false, "exit 0 once the crawl is done and every response is archived")
	return cmd
}

// s3Flags adds the flags that say how to reach an S3-compatible bucket (archive's
// s3:// --out, replay's s3:// WARC arguments).
func s3Flags(fl *pflag.FlagSet, c *warcs3.Config) {
	fl.StringVar(&c.Endpoint, "s3-endpoint", "", "S3 endpoint URL, e.g. http://127.0.0.1:9000 (default $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, then AWS)")
	fl.StringVar(&c.Region, "s3-region", "", "S3 region (default $AWS_REGION, $AWS_DEFAULT_REGION)")
	fl.StringVar(&c.AccessKey, "s3-access-key", "", "S3 access key (default $AWS_ACCESS_KEY_ID)")
	fl.StringVar(&c.SecretKey, "s3-secret-key", "", "S3 secret key (default $AWS_SECRET_ACCESS_KEY; prefer the variable)")
	fl.BoolVar(&c.PathStyle, "s3-path-style", false, "address the bucket in the URL path (MinIO-like servers)")
}
