package cli

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/spiders"
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
