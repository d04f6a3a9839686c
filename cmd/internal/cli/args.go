package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// errNoSpider is the error of a command that needs a spider and got none.
var errNoSpider = errors.New("no spider: pass SPIDER.yaml as an argument or --spider SPIDER.yaml")

// spiderFlag adds --spider to a command that also takes the spider as its first
// argument: every command that needs a spider accepts both.
func spiderFlag(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVar(path, "spider", "", "the spider's YAML file (or give it as the first argument)")
}

// spiderFrom returns the spider file from --spider or, when that is empty, from the
// first argument if it names a YAML file; rest is the other arguments.
func spiderFrom(flag string, args []string) (path string, rest []string, err error) {
	if flag != "" {
		return flag, args, nil
	}
	if len(args) > 0 && isYAMLPath(args[0]) {
		return args[0], args[1:], nil
	}
	return "", args, errNoSpider
}

func isYAMLPath(s string) bool {
	ext := strings.ToLower(filepath.Ext(s))
	return (ext == ".yaml" || ext == ".yml") && !strings.Contains(s, "://")
}

// checkCrawl checks a --crawl value: given, and a valid crawl name.
func checkCrawl(crawl string) error {
	if crawl == "" {
		return errors.New("--crawl is required")
	}
	return spiders.ValidateName(crawl)
}

// spiderArg loads the spider named by --spider (flag) or by the first of args, as
// spiderFrom finds it, and returns it with the other arguments.
func (a *App) spiderArg(flag string, args []string) (*spiders.Spider, []string, error) {
	path, rest, err := spiderFrom(flag, args)
	if err != nil {
		return nil, nil, err
	}
	sp, err := a.loadSpider(path)
	return sp, rest, err
}

// crawlFlags adds --redis and --crawl to a command that works on one crawl in Redis.
func (a *App) crawlFlags(cmd *cobra.Command, crawl *string) {
	a.RedisFlags(cmd, false)
	cmd.Flags().StringVar(crawl, "crawl", "", "crawl (spider) name (required)")
}

// onCrawl is the RunE of a command on the crawl named by *crawl (see crawlFlags): it
// connects, reads the crawl's layout, runs run and closes the connection.
func (a *App) onCrawl(crawl *string, run func(ctx context.Context, rdb *streams.Client, l streams.Layout, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		rdb, l, err := a.openCrawl(ctx, *crawl)
		if err != nil {
			return err
		}
		defer rdb.Close()
		return run(ctx, rdb, l, args)
	}
}

// printJSON writes v to Stdout as indented JSON.
func (a *App) printJSON(v any) error {
	enc := json.NewEncoder(a.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// spiderFlagError is the flag error function of the commands that take a spider file:
// --crawl there gets a hint, since those commands read the crawl's name from the spider.
func spiderFlagError(cmd *cobra.Command, err error) error {
	if strings.Contains(err.Error(), "unknown flag: --crawl") {
		return fmt.Errorf("%w (%s takes the spider file, which names the crawl: streamcrawl %s SPIDER.yaml)", err, cmd.Name(), cmd.Name())
	}
	return err
}
