package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers"
)

func (a *App) seedCommand() *cobra.Command {
	var spiderPath string
	cmd := &cobra.Command{
		Use:   "seed [SPIDER.yaml] --redis URL [--spider SPIDER.yaml] [URL...]",
		Short: "Enqueue the spider's start URLs, or the URLs given",
		Long: `seed puts requests into the crawl's frontier through the duplicate filter: a URL the
crawl has seen before is not queued again. Running services pick them up at once.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sp, args, err := a.spiderArg(spiderPath, args)
			if err != nil {
				return err
			}
			rdb, err := a.Connect(ctx, true)
			if err != nil {
				return err
			}
			defer rdb.Close()
			n, err := handlers.Seed(ctx, rdb, sp, args)
			if err != nil {
				return err
			}
			total := len(args)
			if total == 0 {
				total = len(sp.StartURLs)
			}
			fmt.Fprintf(a.Stdout, "queued %d of %d URLs for crawl %s (%d already seen)\n", n, total, sp.Name, total-n)
			return nil
		},
	}
	a.RedisFlags(cmd, false)
	a.redisWaitFlag(cmd)
	spiderFlag(cmd, &spiderPath)
	cmd.SetFlagErrorFunc(spiderFlagError)
	return cmd
}
