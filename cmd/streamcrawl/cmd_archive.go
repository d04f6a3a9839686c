package main

import (
	"fmt"

	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/processors/warc"
	"github.com/streamcrawl/streamcrawl/spiders"
)

func (a *app) archiveCommand() *cobra.Command {
	var f runFlags
	var crawl, dir, group string
	var maxFile spiders.ByteSize
	var maxFileStr string
	var create bool
	cmd := &cobra.Command{
		Use:   "archive --redis URL --crawl NAME --out DIR [--max-file-size 1GB] [--until-done]",
		Short: "Archive the crawl's responses to WARC files: a consumer group of its own on the responses stream",
		Long: `archive joins the crawl's responses stream(s) with a consumer group of its own (default
"archive") and writes every response as a WARC 1.1 request and response record, one gzip
member per record, to files in --out rotated by size. Archivers started with the same
--group share the work; each writes its own files. A response is acked only after its
records are on disk; a restarted archiver reads the files in --out, cuts a torn tail and
writes no page twice. Responses leave Redis once every group has acked them: run
"archive --create-group" (or start the archiver) before the crawl to archive every page.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if err := spiders.ValidateName(crawl); err != nil {
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
			rdb, err := a.connectWorker(ctx, true)
			if err != nil {
				return err
			}
			defer rdb.Close()
			layout, err := frontier.ReadLayout(ctx, rdb, crawl)
			if err != nil {
				return err
			}
			if err := handlers.EnsureArchiveGroup(ctx, rdb, layout, group); err != nil {
				return err
			}
			if create {
				fmt.Fprintf(a.stdout, "group %s ready on the responses of %s\n", group, crawl)
				return nil
			}
			ac := handlers.ArchiveConfig{Client: rdb, Crawl: crawl, Dir: dir, MaxFileSize: int64(maxFile), Group: group,
				UntilDone: f.untilDone, Consumer: f.consumer, Subscriber: f.subscriber(), Logger: a.log}
			var hc handlers.Config
			if err := installFault(&hc); err != nil {
				return err
			}
			if hc.BeforeAck != nil {
				ac.BeforeAck = func(m *message.Message) { hc.BeforeAck("archive", m) }
			}
			return handlers.Archive(ctx, ac)
		},
	}
	a.redisFlags(cmd, false)
	f.add(cmd, false)
	fl := cmd.Flags()
	fl.StringVar(&crawl, "crawl", "", "crawl name (required)")
	fl.StringVar(&dir, "out", "", "directory of the WARC files (required)")
	fl.StringVar(&group, "group", handlers.DefaultArchiveGroup, "consumer group of the archivers")
	fl.StringVar(&maxFileStr, "max-file-size", "", fmt.Sprintf("start a new file past this size (default %s)", spiders.ByteSize(warc.DefaultMaxFileSize)))
	fl.BoolVar(&create, "create-group", false, "only create the group (before the crawl, so no response is trimmed unarchived) and exit")
	fl.BoolVar(&f.untilDone, "until-done", false, "exit 0 once the crawl is done and every response is archived")
	return cmd
}
