package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// The parts of a figures run, the names --skip takes.
const (
	partPeers  = "peers"
	partBroad  = "broad"
	partMemory = "memory"
)

// figuresOptions are the figures command's settings.
type figuresOptions struct {
	Data, Out   string   // as plots'
	Skip        []string // parts left out
	Quick       bool     // small sizes, for a test of the whole run
	BroadHosts  []int    // bench-broad's host counts
	Colly       string   // the Colly harness ("": built into Cache)
	Crawlee     string   // where crawlee is installed ("": installed into Cache)
	Streamcrawl string   // the streamcrawl binary ("": beside this one, else built into Cache)
	Cache       string   // where Colly and streamcrawl are built and Crawlee installed
	Repo        string   // the streamcrawl checkout to build from ("": found upward from the working directory)
}

func (a *app) figuresCommand() *cobra.Command {
	o := figuresOptions{}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	cmd := &cobra.Command{
		Use:   "figures [--skip peers,memory,broad] [--quick] [--data DIR] [--out DIR]",
		Short: "Run bench-peers, bench-broad and bench-memory with --record, then plots: regenerate the docs' figures",
		Long: `figures regenerates the docs' performance figures: it runs
  bench-peers --pages 5000 --page-size 25000 --per-host 8 --rounds 2   (streamcrawl, Colly, Crawlee)
  bench-broad --pages 20 --hosts H                                      (for each H of --broad-hosts)
  bench-memory --pages 1000000 --interval 5s
each with --record into --data, then plots from --data into --out, and prints how long
each part took. --skip leaves parts out (plots then draws from the runs already in
--data); --quick runs every part small (300 pages, 3 and 10 hosts, 2,000 pages), to try
the whole chain in a minute or two.

bench-peers needs Colly and Crawlee: unless --colly and --crawlee are given, figures
builds the harness in cmd/streamcrawl-bench/peers/colly (go build) and installs
cmd/streamcrawl-bench/crawlee's package.json (npm install) into --cache, from the
checkout at --repo (default: the one holding the working directory). The streamcrawl
binary is --streamcrawl, else the one beside this binary, else built from --repo too.

At the docs' sizes, expect about 15 minutes for bench-peers, 3 for bench-broad and 15-20
for bench-memory on a quiet 2-core machine: run it on a machine of its own.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.figures(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Data, "data", filepath.Join("docs", "performance", "data"), "where the runs are recorded (and plots reads them)")
	fl.StringVar(&o.Out, "out", filepath.Join("docs", "performance"), "where plots writes the SVG files")
	fl.StringSliceVar(&o.Skip, "skip", nil, "parts to leave out: peers, memory, broad")
	fl.BoolVar(&o.Quick, "quick", false, "run every part at a small size (a test of the chain, not figures for the docs)")
	fl.IntSliceVar(&o.BroadHosts, "broad-hosts", []int{10, 100, 300, 1000}, "bench-broad's host counts")
	fl.StringVar(&o.Colly, "colly", "", "the Colly harness binary (default: built from peers/colly into --cache)")
	fl.StringVar(&o.Crawlee, "crawlee", "", "a directory where crawlee is installed (default: installed into --cache)")
	fl.StringVar(&o.Streamcrawl, "streamcrawl", "", "the streamcrawl binary (default: beside this one, else built into --cache)")
	fl.StringVar(&o.Cache, "cache", filepath.Join(cache, "streamcrawl-bench"), "where Colly and streamcrawl are built and Crawlee installed")
	fl.StringVar(&o.Repo, "repo", "", "the streamcrawl checkout to build from (default: found upward from the working directory)")
	return cmd
}

// figures runs the parts (see figuresCommand).
func (a *app) figures(ctx context.Context, o figuresOptions) error {
	for _, s := range o.Skip {
		if !slices.Contains([]string{partPeers, partBroad, partMemory}, s) {
			return fmt.Errorf("figures: --skip %q: want peers, memory or broad", s)
		}
	}
	stamp := time.Now()
	sub := func(args ...string) error {
		fmt.Fprintf(a.Stdout, "figures: streamcrawl-bench %s\n", strings.Join(args, " "))
		if code := Run(ctx, args, a.Stdout, a.Stderr); code != 0 {
			return fmt.Errorf("figures: %s: exit %d", args[0], code)
		}
		return nil
	}
	var took []string
	part := func(name string, run func() error) error {
		if slices.Contains(o.Skip, name) {
			return nil
		}
		start := time.Now()
		if err := run(); err != nil {
			return err
		}
		took = append(took, fmt.Sprintf("%s %s", name, time.Since(start).Round(time.Second)))
		fmt.Fprintf(a.Stdout, "figures: %s took %s\n", name, time.Since(start).Round(time.Second))
		return nil
	}
	record := func(kind, part string) string { return filepath.Join(o.Data, recordName(kind, part, stamp)) }
	if err := part(partPeers, func() error {
		args, err := a.peersArgs(ctx, o)
		if err != nil {
			return err
		}
		return sub(append(args, "--record", record(recordPeers, ""))...)
	}); err != nil {
		return err
	}
	if err := part(partBroad, func() error {
		hosts, size := o.BroadHosts, []string{"--pages", "20"}
		if o.Quick {
			hosts, size = []int{3, 10}, []string{"--pages", "4", "--delay", "100ms", "--latency", "5ms"}
		}
		for _, h := range hosts {
			args := append([]string{"bench-broad", "--hosts", strconv.Itoa(h)}, size...)
			if err := sub(append(args, "--log-level", "warn", "--record", record(recordBroad, fmt.Sprintf("h%05d", h)))...); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := part(partMemory, func() error {
		size := []string{"--pages", "1000000", "--interval", "5s"}
		if o.Quick {
			size = []string{"--pages", "2000", "--interval", "200ms"}
		}
		return sub(append(append([]string{"bench-memory"}, size...), "--record", record(recordMemory, ""))...)
	}); err != nil {
		return err
	}
	if err := part("plots", func() error { return drawPlots(a.Stdout, plotsOptions{Data: o.Data, Out: o.Out}) }); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "figures: done in %s (%s)\n", time.Since(stamp).Round(time.Second), strings.Join(took, ", "))
	return nil
}

// peersArgs returns bench-peers' command line for o, building Colly and streamcrawl and
// installing Crawlee first where o does not name them.
func (a *app) peersArgs(ctx context.Context, o figuresOptions) ([]string, error) {
	args := []string{"bench-peers", "--pages", "5000", "--page-size", "25000", "--per-host", "8", "--rounds", "2"}
	if o.Quick {
		args = []string{"bench-peers", "--pages", "300", "--page-size", "0", "--per-host", "8", "--rounds", "1"}
	}
	repo := o.Repo
	needRepo := o.Colly == "" || o.Streamcrawl == "" && !besideThis("streamcrawl")
	if repo == "" && needRepo {
		var err error
		if repo, err = findRepo(); err != nil {
			return nil, err
		}
	}
	if o.Colly == "" {
		o.Colly = filepath.Join(o.Cache, "colly-bench")
		fmt.Fprintf(a.Stdout, "figures: building the Colly harness into %s\n", o.Colly)
		if err := goBuild(ctx, filepath.Join(repo, "cmd", "streamcrawl-bench", "peers", "colly"), o.Colly, "."); err != nil {
			return nil, err
		}
	}
	if o.Streamcrawl == "" && !besideThis("streamcrawl") {
		o.Streamcrawl = filepath.Join(o.Cache, "streamcrawl")
		fmt.Fprintf(a.Stdout, "figures: building streamcrawl into %s\n", o.Streamcrawl)
		if err := goBuild(ctx, repo, o.Streamcrawl, "./cmd/streamcrawl"); err != nil {
			return nil, err
		}
	}
	if o.Crawlee == "" {
		o.Crawlee = filepath.Join(o.Cache, "crawlee")
		fmt.Fprintf(a.Stdout, "figures: installing Crawlee into %s (once)\n", o.Crawlee)
		if err := installCrawlee(ctx, o.Crawlee); err != nil {
			return nil, err
		}
	}
	args = append(args, "--colly", o.Colly, "--crawlee", o.Crawlee)
	if o.Streamcrawl != "" {
		args = append(args, "--streamcrawl", o.Streamcrawl)
	}
	return args, nil
}

// besideThis says whether an executable file name sits beside this binary.
func besideThis(name string) bool {
	exe, err := os.Executable()
	return err == nil && fileExists(filepath.Join(filepath.Dir(exe), name))
}

// goBuild runs "go build -o out pkg" in dir.
func goBuild(ctx context.Context, dir, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("figures: go build %s in %s: %w\n%s", pkg, dir, err, b)
	}
	return nil
}

// findRepo returns the streamcrawl checkout holding the working directory: the nearest
// directory upward whose go.mod is module github.com/streamcrawl/streamcrawl.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			first, _ := bufio.NewReader(f).ReadString('\n')
			_ = f.Close()
			if strings.TrimSpace(first) == "module github.com/streamcrawl/streamcrawl" {
				return dir, nil
			}
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("figures: no streamcrawl checkout holds the working directory: pass --repo, or --colly and --streamcrawl")
		}
		dir = up
	}
}
