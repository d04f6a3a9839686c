package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/spiders"
)

func (a *App) submitCommand() *cobra.Command {
	var spiderPath, goSpider, schedule string
	var weight int
	var cont continuousFlags
	cmd := &cobra.Command{
		Use:   "submit SPIDER.yaml --redis URL [--continuous [--idle-window D]] [--schedule CRON] [--weight N]",
		Short: "Register a crawl with the fleet of workers, or its next version",
		Long: `submit registers a crawl in Redis for the fleet's workers (streamcrawl worker) to serve:
a YAML spider, validated here and stored with the crawl (it is data, never code), or with
--go NAME a Go spider compiled into the workers. The crawl's name is the spider's. A new
crawl is queued (scheduled with --schedule); submitting a registered crawl again is its
next version: a running or paused crawl keeps its state and its workers move to the new
version, an ended one is queued again. A bad spider file exits with status 2 and the
file's line.`,
		Example: `  streamcrawl submit shop.yaml --redis redis://localhost:6379
  streamcrawl submit news.yaml --redis redis://localhost:6379 --schedule '0 3 * * *' --weight 2
  streamcrawl submit docs.yaml --redis redis://localhost:6379 --continuous --idle-window 1h
  streamcrawl submit --go prices --redis redis://localhost:6379`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sub := fleet.Submission{GoSpider: goSpider, Weight: weight, Schedule: schedule}
			if m := cont.mode(); m != nil {
				sub.Continuous = fleet.ContinuousOf(*m)
			}
			if err := a.submission(&sub, spiderPath, args); err != nil {
				return err
			}
			if weight < 1 {
				return fmt.Errorf("--weight %d: want 1 or more", weight)
			}
			if schedule != "" {
				if _, err := fleet.ParseSchedule(schedule); err != nil {
					return fmt.Errorf("--schedule: %w", err)
				}
			}
			rdb, err := a.Connect(ctx, true)
			if err != nil {
				return err
			}
			defer rdb.Close()
			c, err := fleet.New(rdb).Submit(ctx, sub)
			if errors.Is(err, fleet.ErrState) {
				return fmt.Errorf("crawl %s is being deleted: submit it again once `streamcrawl delete --crawl %s` has ended", sub.Name, sub.Name)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "submitted crawl %s version %d (%s)\n", c.Name, c.Version, c.State)
			return nil
		},
	}
	a.RedisFlags(cmd, false)
	spiderFlag(cmd, &spiderPath)
	fl := cmd.Flags()
	fl.StringVar(&goSpider, "go", "", "submit the Go spider of this name, compiled into the workers (instead of a YAML file); the crawl takes its name")
	fl.StringVar(&schedule, "schedule", "", `run the crawl at the times of this cron schedule (UTC): five fields ("0 3 * * *": 03:00 daily), @daily, @hourly, @every 6h; CRON_TZ=Zone first for another zone`)
	fl.IntVar(&weight, "weight", 1, "the crawl's share of each worker's concurrency against the other active crawls' (1-1000)")
	fl.BoolVar(&cont.on, "continuous", false, "keep the crawl going with its revisits (settings.revisit): it is not done while a revisit is scheduled (within --idle-window), as crawl --continuous")
	fl.DurationVar(&cont.window.IdleWindow, "idle-window", 0, "with --continuous: the crawl is done once nothing else is left and its next revisit is due further off than this; 0: never while any revisit is scheduled (implies --continuous)")
	cont.changed = fl.Changed
	cmd.SetFlagErrorFunc(spiderFlagError)
	return cmd
}

// submission fills in the spider of sub: the Go spider's name checked (the workers know
// whether they have it), or the YAML file read and compiled before anything is written,
// a bad one an error with exit status 2 that names the file and line.
func (a *App) submission(sub *fleet.Submission, spiderPath string, args []string) error {
	if sub.GoSpider != "" {
		if spiderPath != "" || len(args) > 0 {
			return errors.New("give a YAML spider file or --go NAME, not both")
		}
		sub.Name = sub.GoSpider
		return spiders.ValidateName(sub.Name)
	}
	path, rest, err := spiderFrom(spiderPath, args)
	if err != nil {
		return errors.New("no spider: pass SPIDER.yaml as an argument, --spider SPIDER.yaml, or --go NAME for a Go spider compiled into the workers")
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q: submit takes one spider file", rest)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return withExit(err, 2)
	}
	sp, warnings, err := spiders.Parse(path, data)
	if err != nil {
		return withExit(err, 2)
	}
	for _, w := range warnings {
		a.Log.Warn(w)
	}
	sub.Name, sub.Spider = sp.Name, data
	return nil
}

// codedError is an error whose command exits with a status of its own (Execute prints
// the error, then exits with it).
type codedError struct {
	err  error
	code exitError
}

func (e codedError) Error() string   { return e.err.Error() }
func (e codedError) Unwrap() []error { return []error{e.err, e.code} }

// withExit returns err with exit status code.
func withExit(err error, code int) error { return codedError{err: err, code: exitError(code)} }
