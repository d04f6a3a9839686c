package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/frontier"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// app holds the global flags and what they open.
type app struct {
	stdout, stderr io.Writer
	redisURL       string
	poolSize       int
	partitions     int // of the loaded spider, when one is
	logLevel       string
	logFormat      string
	log            *zap.Logger
	progress       bool          // crawl and demo show a progress line
	progressEvery  time.Duration // its refresh interval; 0: by terminal or not
	term           *termWriter   // stderr when it is a terminal, else nil
}

// Run runs the command line args and returns the exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if a.log != nil {
		_ = a.log.Sync()
	}
	if err != nil {
		fmt.Fprintln(stderr, "streamcrawl:", err)
		var ee exitError
		if errors.As(err, &ee) {
			return int(ee)
		}
		return 1
	}
	return 0
}

// exitError is an error that carries its exit code.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "streamcrawl",
		Short: "A distributed web crawler on Redis Streams",
		Long: `streamcrawl crawls and scrapes web sites with many workers sharing one crawl through
Redis Streams: requests, responses and items flow between the fetch, parse and store
stages in consumer groups, and nothing is acked before its output is in Redis.

Start with 'streamcrawl demo'.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.setupLogger()
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	pf.StringVar(&a.logFormat, "log-format", "console", "log format: console or json")
	root.AddCommand(a.crawlCommand(), a.stageCommand("fetch"), a.stageCommand("parse"), a.stageCommand("store"),
		a.seedCommand(), a.statusCommand(), a.resetCommand(), a.deadCommand(), a.chaosCommand(), a.replayCommand(), a.processCommand(), a.archiveCommand(), a.groupsCommand(), a.benchDedupCommand(), a.demoSiteCommand(), a.demoCommand(), a.benchCommand(), a.exporterCommand(), a.dashboardCommand(), a.benchBroadCommand(), a.benchScaleCommand())
	return root
}

// redisFlags adds --redis and --redis-pool-size to cmd.
func (a *app) redisFlags(cmd *cobra.Command, embeddedOK bool) {
	help := "Redis URL: redis://[user:pass@]host:port[/db][?pool_size=N&dial_timeout=5s...] or rediss:// (default $REDIS_URL)"
	if embeddedOK {
		help += "; without it an embedded in-process Redis is used"
	}
	cmd.Flags().StringVar(&a.redisURL, "redis", "", help)
	cmd.Flags().IntVar(&a.poolSize, "redis-pool-size", 0, fmt.Sprintf("Redis connections this process holds at most (default %d)", streams.DefaultPoolSize))
}

// connect opens Redis from --redis or $REDIS_URL; required says an URL is needed.
func (a *app) connect(ctx context.Context, required bool) (*streams.Client, error) {
	return a.connectOpts(ctx, required, false)
}

// connectCrawl checks a crawl name given with --crawl and connects (--redis required).
func (a *app) connectCrawl(ctx context.Context, crawl string) (*streams.Client, error) {
	if err := checkCrawl(crawl); err != nil {
		return nil, err
	}
	return a.connect(ctx, true)
}

// openCrawl is connectCrawl that also reads the crawl's stored layout.
func (a *app) openCrawl(ctx context.Context, crawl string) (*streams.Client, frontier.Layout, error) {
	rdb, err := a.connectCrawl(ctx, crawl)
	if err != nil {
		return nil, frontier.Layout{}, err
	}
	layout, err := frontier.ReadLayout(ctx, rdb, crawl)
	if err != nil {
		_ = rdb.Close()
		return nil, frontier.Layout{}, err
	}
	return rdb, layout, nil
}

// connectWorker is connect for commands that run stages: it also warns about server
// settings that can lose crawl state.
func (a *app) connectWorker(ctx context.Context, required bool) (*streams.Client, error) {
	return a.connectOpts(ctx, required, true)
}

func (a *app) connectOpts(ctx context.Context, required, check bool) (*streams.Client, error) {
	url := a.redisURL
	if url == "" {
		url = os.Getenv("REDIS_URL")
	}
	if url == "" && required {
		return nil, errors.New("no Redis: pass --redis redis://host:port or set REDIS_URL")
	}
	c, err := streams.Connect(ctx, streams.ClientOptions{URL: url, PoolSize: a.poolSize, Partitions: a.partitions,
		CheckSettings: check, Logger: a.log})
	if err != nil {
		return nil, err
	}
	if c.Embedded != nil {
		a.log.Info("using embedded Redis (single machine, nothing persisted)", zap.String("addr", c.Addr))
	}
	return c, nil
}

// loadSpider loads a YAML spider and logs its warnings.
func (a *app) loadSpider(path string) (*spiders.Spider, error) {
	if path == "" {
		return nil, errNoSpider
	}
	sp, warnings, err := spiders.LoadFile(path)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		a.log.Warn(w)
	}
	a.partitions = sp.Settings.Partitions // sizes the connection pool
	return sp, nil
}

func (a *app) setupLogger() error {
	var level zapcore.Level
	if err := level.Set(a.logLevel); err != nil {
		return fmt.Errorf("bad --log-level %q: %w", a.logLevel, err)
	}
	var cfg zap.Config
	switch strings.ToLower(a.logFormat) {
	case "json":
		cfg = zap.NewProductionConfig()
	case "console":
		cfg = zap.NewDevelopmentConfig()
		cfg.Development = false
		cfg.DisableStacktrace = true
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
		if f, ok := a.stderr.(*os.File); !ok || !isTerminal(f) {
			cfg.EncoderConfig.EncodeLevel = zapcore.CapitalLevelEncoder
		}
	default:
		return fmt.Errorf("bad --log-format %q: want console or json", a.logFormat)
	}
	cfg.Level = zap.NewAtomicLevelAt(level)
	cfg.OutputPaths = []string{"stderr"}
	cfg.Sampling = nil
	enc := zapcore.NewConsoleEncoder(cfg.EncoderConfig)
	if a.logFormat == "json" {
		enc = zapcore.NewJSONEncoder(cfg.EncoderConfig)
	}
	out := a.stderr
	if f, ok := a.stderr.(*os.File); ok && isTerminal(f) {
		a.term = &termWriter{w: a.stderr}
		out = a.term
	}
	a.log = zap.New(zapcore.NewCore(enc, zapcore.AddSync(out), cfg.Level))
	return nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
