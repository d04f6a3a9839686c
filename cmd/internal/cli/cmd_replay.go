package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/processors"
	"github.com/streamcrawl/streamcrawl/processors/warcs3"
	"github.com/streamcrawl/streamcrawl/streams"
)

func (a *App) replayCommand() *cobra.Command {
	var f RunFlags
	var crawl, stage, from, to, spiderPath, group string
	var fromWARC bool
	var s3c warcs3.Config
	cmd := &cobra.Command{
		Use:   "replay --redis URL --crawl NAME --stage parse|store --from ID|TIME [--to ID|TIME] [--spider SPIDER.yaml] [--out FILE] | replay --stage parse --from-warc --spider SPIDER.yaml [--out FILE] FILES|DIRS|s3://BUCKET/PREFIX...",
		Short: "Re-run the parse or store stage over retained entries, fetching nothing",
		Long: `replay runs a stage again over the entries its input stream still retains (see the
--retain-* flags of the stages), through a consumer group of its own:

  --stage parse   re-parses stored responses with --spider (e.g. a fixed selector) and
                  writes the items to --out, or, without --out, to the items stream tagged
                  with the replay (metadata sc_replay) for the store group and
                  post-processors. Links found are not followed: nothing is fetched.
  --stage store   re-delivers stored items to a new sink (--out required).

--from and --to take an entry ID (1700000000000-0), an RFC 3339 time, a duration ago
(2h), or 0 for the beginning; --to defaults to the newest entry when the replay starts.

With --from-warc, parse re-parses the pages archived in the WARC files (or directories of
.warc.gz files, or s3://BUCKET/PREFIX: the .warc.gz objects right under the prefix, as
"archive --out s3://..." uploads them) given, written by "streamcrawl archive": no Redis,
no retention, nothing fetched; each page runs the callback its request named, with its
meta. A bucket is reached as archive reaches it: the --s3-* flags or the AWS_*
variables.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if fromWARC {
				return a.replayWARC(ctx, stage, spiderPath, &f, s3c, args)
			}
			if len(args) > 0 {
				return fmt.Errorf("unexpected arguments %q (WARC files need --from-warc)", args)
			}
			rdb, err := a.connectCrawl(ctx, crawl)
			if err != nil {
				return err
			}
			defer rdb.Close()
			cfg := handlers.ReplayConfig{Client: rdb, Crawl: crawl, Stage: stage, From: from, To: to,
				Group: group, Consumer: f.consumer, Subscriber: f.subscriber(), Logger: a.Log}
			if spiderPath != "" {
				if cfg.Spider, err = a.loadSpider(spiderPath); err != nil {
					return err
				}
				cfg.Spider.Name = crawl
			}
			if f.Out != "" {
				var sink processors.Sink
				if sink, _, err = f.openSink(ctx, crawl, a.Log); err != nil {
					return err
				}
				cfg.Sink = sink
			}
			res, err := handlers.Replay(ctx, cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "replay %s of %s: %d entries, %d items, %d links not followed, %d entries past --to skipped\n",
				res.Group, crawl, res.Entries, res.Items, res.RequestsDiscarded, res.Skipped)
			if f.Out != "" {
				fmt.Fprintf(a.Stdout, "items written to %s\n", processors.RedactedOut(f.Out))
			}
			return nil
		},
	}
	a.crawlFlags(cmd, &crawl)
	fl := cmd.Flags()
	fl.StringVar(&stage, "stage", streams.StageParse, "stage to replay: parse or store")
	fl.StringVar(&from, "from", "0", "first entry: ID, RFC 3339 time, duration ago, or 0")
	fl.StringVar(&to, "to", "", "last entry (default: the newest when the replay starts)")
	fl.StringVar(&spiderPath, "spider", "", "spider YAML to parse with (parse replays)")
	fl.StringVar(&group, "group", "", "consumer group of the replay (default replay-<stage>-<ms>; an existing one is moved with XGROUP SETID)")
	fl.StringVar(&f.Out, "out", "", "sink for the items: FILE.jsonl, FILE.csv or postgres://...")
	fl.StringVar(&f.consumer, "consumer", "", "consumer name (default host-pid)")
	fl.BoolVar(&fromWARC, "from-warc", false, "re-parse the pages of the WARC files, directories or s3:// prefixes given as arguments (no Redis)")
	s3Flags(fl, &s3c)
	return cmd
}

// replayWARC runs a parse replay over WARC files: local files, directories of them, or
// s3:// prefixes of a bucket (reached with s3c).
func (a *App) replayWARC(ctx context.Context, stage, spiderPath string, f *RunFlags, s3c warcs3.Config, args []string) error {
	if stage != streams.StageParse {
		return fmt.Errorf("--from-warc replays the parse stage only, not %q", stage)
	}
	if spiderPath == "" || len(args) == 0 {
		return fmt.Errorf("--from-warc needs --spider and WARC files or directories")
	}
	sp, err := a.loadSpider(spiderPath)
	if err != nil {
		return err
	}
	files, err := warcSources(ctx, s3c, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no .warc.gz files in %q", args)
	}
	if f.Out == "" {
		f.Out = sp.Name + "-replay.jsonl"
	}
	sink, path, err := f.openSink(ctx, sp.Name, a.Log)
	if err != nil {
		return err
	}
	res, err := handlers.ReplayWARC(ctx, files, sp, sink, a.Log)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "replay of %d WARC files: %d pages, %d items, %d pages failed, %d links not followed\nitems written to %s\n",
		len(files), res.Pages, res.Items, res.Failed, res.RequestsDiscarded, path)
	return nil
}

// warcSources returns the WARC files args name, in order: a file, the .warc.gz files
// of a directory (sorted), or the .warc.gz objects right under an s3://BUCKET/PREFIX
// (sorted; reached with s3c).
func warcSources(ctx context.Context, s3c warcs3.Config, args []string) ([]handlers.WARCSource, error) {
	var files []handlers.WARCSource
	for _, arg := range args {
		if warcs3.IsURL(arg) {
			c := s3c
			var err error
			if c.Bucket, c.Prefix, err = warcs3.ParseURL(arg); err != nil {
				return nil, err
			}
			store, err := warcs3.New(ctx, c)
			if err != nil {
				return nil, err
			}
			keys, err := store.Files(ctx)
			if err != nil {
				return nil, err
			}
			sort.Strings(keys)
			for _, key := range keys {
				files = append(files, handlers.WARCSource{Name: "s3://" + c.Bucket + "/" + key,
					Open: func(ctx context.Context) (io.ReadCloser, error) { return store.Open(ctx, key) }})
			}
			continue
		}
		if st, err := os.Stat(arg); err == nil && st.IsDir() {
			found, _ := filepath.Glob(filepath.Join(arg, "*.warc.gz"))
			sort.Strings(found)
			for _, p := range found {
				files = append(files, handlers.WARCFile(p))
			}
			continue
		}
		files = append(files, handlers.WARCFile(arg))
	}
	return files, nil
}

func (a *App) processCommand() *cobra.Command {
	var f RunFlags
	var crawl, group, from, require string
	var trim bool
	cmd := &cobra.Command{
		Use:   "process --redis URL --crawl NAME --group NAME [--from ID] [--out FILE]",
		Short: "Run a post-processor: its own consumer group on the crawl's items stream",
		Long: `process joins the crawl's items stream with a consumer group of its own: every group
sees every item, and processes started with the same --group share its items. Items go
through the built-in processors chosen by flags, then to --out, with the same
at-least-once delivery, reclaim of dead consumers' items and dead letters as the stages.
A post-processor never holds the crawl open. For processors in Go, see the processors
package and handlers.Process.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if group == "" {
				return fmt.Errorf("--group is required")
			}
			rdb, err := a.connectExisting(ctx, []string{crawl}, true)
			if err != nil {
				return err
			}
			defer rdb.Close()
			var chain processors.Chain
			if trim {
				chain = append(chain, processors.TrimSpace())
			}
			req, err := processors.ParseRequire(require)
			if err != nil {
				return err
			}
			if req != nil {
				chain = append(chain, req)
			}
			if f.Out == "" {
				f.Out = crawl + "-" + group + ".jsonl"
			}
			sink, path, err := f.openSink(ctx, crawl, a.Log)
			if err != nil {
				return err
			}
			a.Log.Sugar().Infof("post-processor %s of %s writing to %s", group, crawl, path)
			pc := handlers.ProcessConfig{Client: rdb, Crawl: crawl, Group: group, From: from,
				Processors: chain, Sink: sink, UntilDone: f.UntilDone, Consumer: f.consumer,
				Subscriber: f.subscriber(), Logger: a.Log}
			if pc.Metrics, err = a.serveMetrics(ctx, f.metricsAddr, rdb, sinkKind(f.Out), nil); err != nil {
				return err
			}
			return a.runGroupReader(ctx, "process", &pc.BeforeAck, func() error { return handlers.Process(ctx, pc) })
		},
	}
	a.crawlFlags(cmd, &crawl)
	a.redisWaitFlag(cmd)
	f.AddConsumer(cmd, true)
	fl := cmd.Flags()
	fl.StringVar(&group, "group", "", "consumer group of this post-processor (required)")
	fl.StringVar(&from, "from", "0", "where a new group starts: ID, RFC 3339 time, duration ago, 0, or $ for new items only")
	fl.StringVar(&require, "require", "", "drop items lacking any of these comma-separated fields")
	fl.BoolVar(&trim, "trim", false, "trim whitespace around string fields")
	f.AddMetrics(cmd)
	fl.BoolVar(&f.UntilDone, "until-done", false, "exit 0 once the crawl is done and this group has every item")
	fl.Lookup("out").Usage = "sink: FILE.jsonl (default <crawl>-<group>.jsonl), FILE.csv or postgres://..."
	return cmd
}
