package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/streamcrawl/streamcrawl/handlers"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// App holds a command line's global flags and what they open: the state every command
// of streamcrawl and of streamcrawl-bench shares.
type App struct {
	// Stdout and Stderr are where the commands write their output and their logs.
	Stdout, Stderr io.Writer
	// Stdin is where a command asks a person (dashboard picking a crawl); os.Stdin.
	Stdin io.Reader
	// RedisURL is --redis; empty: $REDIS_URL, else (where allowed) an embedded Redis.
	RedisURL string
	// Log is the logger that --log-level and --log-format set up before a command runs.
	Log *zap.Logger

	poolSize      int
	partitions    int // of the loaded spider, when one is
	logLevel      string
	logFormat     string
	progress      bool          // crawl and demo show a progress line
	progressEvery time.Duration // its refresh interval; 0: by terminal or not
	term          *termWriter   // stderr when it is a terminal, else nil
	embedded      bool          // the command runs on an embedded Redis (gone when it ends)
	redisWait     time.Duration // --redis-wait
	waitFlag      bool          // the command run has --redis-wait
}

// New returns an App that writes to stdout and stderr.
func New(stdout, stderr io.Writer) *App { return &App{Stdout: stdout, Stderr: stderr, Stdin: os.Stdin} }

// Run runs the streamcrawl command line args and returns the exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := New(stdout, stderr)
	return a.Execute(ctx, a.rootCommand(), args)
}

// Execute runs root with args and returns the exit code: 0, the code of an exit error,
// or 1 after printing the error to Stderr after root's name.
func (a *App) Execute(ctx context.Context, root *cobra.Command, args []string) int {
	root.SetArgs(args)
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	err := root.ExecuteContext(ctx)
	if a.Log != nil {
		_ = a.Log.Sync()
	}
	if err != nil {
		fmt.Fprintf(a.Stderr, "%s: %v\n", root.Name(), err)
		if hint := lossHint(err); hint != "" {
			fmt.Fprintln(a.Stderr, hint)
		}
		var ee exitError
		if errors.As(err, &ee) {
			return int(ee)
		}
		return 1
	}
	return 0
}

// lossHint says how to resume a crawl whose state Redis lost, or that may be missing
// pages after a failover; "" for other errors.
func lossHint(err error) string {
	const redo = "To crawl it again: streamcrawl crawl SPIDER.yaml --fresh (or streamcrawl reset --crawl NAME, then seed " +
		"and start the stage services). To rebuild items from archived pages without fetching: streamcrawl replay " +
		"--stage parse --from-warc --spider SPIDER.yaml --out FILE DIR (archives written by streamcrawl archive)."
	switch {
	case errors.Is(err, streams.ErrStateLost):
		return "The crawl's state in Redis is gone; what its processes held is not enough to go on. " + redo
	case errors.Is(err, handlers.ErrFailoverLoss):
		return "Items already stored stay valid; pages whose writes were lost are missing. " + redo +
			" With durability: replicated (spider setting or --durability) a failover loses nothing acknowledged."
	}
	return ""
}

// exitError is an error that carries its exit code.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// rootCommand is streamcrawl's command tree: what an operator runs. The benchmark and
// chaos tooling is the other command, streamcrawl-bench.
func (a *App) rootCommand() *cobra.Command {
	root := a.NewRoot("streamcrawl", "A distributed web crawler on Redis Streams",
		`streamcrawl crawls and scrapes web sites with many workers sharing one crawl through
Redis Streams: requests, responses and items flow between the fetch, parse and store
stages in consumer groups, and nothing is acked before its output is in Redis.

Start with 'streamcrawl demo'.`)
	root.AddCommand(a.crawlCommand(), a.stageCommand("fetch"), a.stageCommand("parse"), a.stageCommand("store"),
		a.seedCommand(), a.statusCommand(), a.resetCommand(), a.deadCommand(), a.replayCommand(), a.processCommand(),
		a.archiveCommand(), a.groupsCommand(), a.demoSiteCommand(), a.demoCommand(), a.exporterCommand(), a.dashboardCommand(),
		a.workerCommand(), a.submitCommand(), a.crawlsCommand(), a.pauseCommand(), a.resumeCommand(), a.cancelCommand(), a.deleteCommand(),
		a.versionCommand(root.Name()))
	root.Version = buildVersion(root.Name()) // --version prints it, as version does
	root.SetVersionTemplate("{{.Version}}\n")
	root.Flags().BoolP("version", "v", false, "print the module version and the VCS revision (the version command)")
	return root
}

// NewRoot returns a root command called use with the global flags (--log-level,
// --log-format), which set up Log before any of its commands runs.
func (a *App) NewRoot(use, short, long string) *cobra.Command {
	root := &cobra.Command{
		Use:           use,
		Short:         short,
		Long:          long,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.waitFlag = cmd.Flags().Lookup("redis-wait") != nil // $REDIS_WAIT applies to it
			return a.setupLogger()
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	pf.StringVar(&a.logFormat, "log-format", "console", "log format: console or json")
	return root
}

// WorkerCommands are the commands a benchmark starts as child processes of its own
// binary (fetch, parse, store, crawl, demo-site, and a fleet's worker and submit),
// hidden from its help: the same code as streamcrawl's, so its figures are streamcrawl's.
func (a *App) WorkerCommands() []*cobra.Command {
	cmds := []*cobra.Command{a.stageCommand(streams.StageFetch), a.stageCommand(streams.StageParse),
		a.stageCommand(streams.StageStore), a.crawlCommand(), a.demoSiteCommand(), a.workerCommand(), a.submitCommand()}
	for _, c := range cmds {
		c.Hidden = true
	}
	return cmds
}

// RedisFlags adds --redis and --redis-pool-size to cmd; embeddedOK says the command
// runs on an embedded Redis when neither --redis nor $REDIS_URL is given.
func (a *App) RedisFlags(cmd *cobra.Command, embeddedOK bool) {
	help := "Redis URL: redis://[user:pass@]host:port[/db][?pool_size=N&dial_timeout=5s...] or rediss:// (TLS; ?tls_ca=FILE&tls_cert=FILE&tls_key=FILE for a private CA and a client certificate); a cluster: redis+cluster://host:port,host:port; Sentinel: redis://sentinel:port?master_name=NAME&addr=sentinel2:port&addr=... (default $REDIS_URL)"
	if embeddedOK {
		help += "; without it an embedded in-process Redis is used"
	}
	cmd.Flags().StringVar(&a.RedisURL, "redis", "", help)
	cmd.Flags().IntVar(&a.poolSize, "redis-pool-size", 0, fmt.Sprintf("Redis connections this process holds at most (default %d)", streams.DefaultPoolSize))
}

// Connect opens Redis from --redis or $REDIS_URL (without either, an embedded Redis
// unless required says an URL is needed).
func (a *App) Connect(ctx context.Context, required bool) (*streams.Client, error) {
	return a.connectOpts(ctx, required, false)
}

// connectCrawl checks a crawl name given with --crawl, connects (--redis required) and
// checks that Redis holds that crawl: every command on an existing crawl starts here,
// so a mistyped name gets one answer (inspect.NoCrawlError, listing the crawls there)
// and creates no key.
func (a *App) connectCrawl(ctx context.Context, crawl string) (*streams.Client, error) {
	return a.connectExisting(ctx, []string{crawl}, false)
}

// connectExisting is connectCrawl for one crawl or more; worker says the command runs
// a consumer group of its own (it gets connectWorker's settings check).
func (a *App) connectExisting(ctx context.Context, crawls []string, worker bool) (*streams.Client, error) {
	for _, c := range crawls {
		if err := checkCrawl(c); err != nil {
			return nil, err
		}
	}
	rdb, err := a.connectOpts(ctx, true, worker)
	if err != nil {
		return nil, err
	}
	for _, c := range crawls {
		if err := inspect.RequireCrawl(ctx, rdb, c, rdb.Addr); err != nil {
			_ = rdb.Close()
			return nil, err
		}
	}
	return rdb, nil
}

// openCrawl is connectCrawl that also reads the crawl's stored layout.
func (a *App) openCrawl(ctx context.Context, crawl string) (*streams.Client, streams.Layout, error) {
	rdb, err := a.connectCrawl(ctx, crawl)
	if err != nil {
		return nil, streams.Layout{}, err
	}
	layout, err := streams.ReadLayout(ctx, rdb, crawl)
	if err != nil {
		_ = rdb.Close()
		return nil, streams.Layout{}, err
	}
	return rdb, layout, nil
}

// connectWorker is connect for commands that run stages: it also warns about server
// settings that can lose crawl state.
func (a *App) connectWorker(ctx context.Context, required bool) (*streams.Client, error) {
	return a.connectOpts(ctx, required, true)
}

func (a *App) connectOpts(ctx context.Context, required, check bool) (*streams.Client, error) {
	url := a.RedisURL
	if url == "" {
		url = os.Getenv("REDIS_URL")
	}
	if url == "" && required {
		return nil, errors.New("no Redis: pass --redis redis://host:port or set REDIS_URL")
	}
	wait, err := a.redisWaitFor()
	if err != nil {
		return nil, err
	}
	c, err := a.connectWaiting(ctx, streams.ClientOptions{URL: url, PoolSize: a.poolSize, Partitions: a.partitions,
		CheckSettings: check, Logger: a.Log}, wait)
	if err != nil {
		return nil, err
	}
	if c.Embedded != nil {
		a.Log.Info("using embedded Redis (single machine, nothing persisted)", zap.String("addr", c.Addr))
	}
	return c, nil
}

// loadSpider loads a YAML spider and logs its warnings (deprecated keys) at WARN. It
// clears Spider.Warnings once logged, so that handlers.Crawl, which logs them when it
// starts, does not log them again.
func (a *App) loadSpider(path string) (*spiders.Spider, error) {
	if path == "" {
		return nil, errNoSpider
	}
	sp, warnings, err := spiders.LoadFile(path)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		a.Log.Warn(w)
	}
	sp.Warnings = nil
	a.partitions = sp.Settings.Partitions // sizes the connection pool
	return sp, nil
}

func (a *App) setupLogger() error {
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
		if f, ok := a.Stderr.(*os.File); !ok || !isTerminal(f) {
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
	out := a.Stderr
	if f, ok := a.Stderr.(*os.File); ok && isTerminal(f) {
		a.term = &termWriter{w: a.Stderr}
		out = a.term
	}
	// No log line shows a URL's credentials, whatever field or error holds the URL.
	a.Log = zap.New(zapcore.NewCore(handlers.RedactingEncoder(enc), zapcore.AddSync(out), cfg.Level))
	return nil
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
