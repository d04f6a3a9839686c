package browser

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/handlers/internal/conf"
)

// Defaults of Config.
const (
	// DefaultBrowsers is how many browsers a pool runs at most.
	DefaultBrowsers = 1
	// DefaultTabs is how many pages one browser renders at once.
	DefaultTabs = 4
	// DefaultRetireAfter is how many pages a browser renders before it is replaced.
	DefaultRetireAfter = 100
	// DefaultMaxMemory is the memory (PSS of its process tree) above which a browser
	// is replaced.
	DefaultMaxMemory = 1 << 30
	// DefaultLaunchTimeout bounds a browser's start.
	DefaultLaunchTimeout = 15 * time.Second
	// DefaultIdleTimeout closes a browser that rendered nothing for this long.
	DefaultIdleTimeout = time.Minute
	// DefaultSampleInterval is how often the pool measures its browsers' memory.
	DefaultSampleInterval = 2 * time.Second
	// DefaultMinMemoryAllowance is the least default MemoryAllowance: what one page
	// may take above a small MaxMemory before its browser is killed.
	DefaultMinMemoryAllowance = 512 << 20
	// DefaultPageSampleInterval is how often the pool measures the memory of a browser
	// that is rendering pages.
	DefaultPageSampleInterval = 250 * time.Millisecond
	// DefaultIdleQuiet is how long a page must have no request in flight to count as
	// idle (the networkidle wait, and after scrolls and clicks).
	DefaultIdleQuiet = 250 * time.Millisecond
	// closeTimeout bounds a browser's graceful close before it is killed.
	closeTimeout = 5 * time.Second
)

// Config configures a Pool.
type Config struct {
	// ExecPath is the browser binary. Default: the first of chromium,
	// chromium-browser, google-chrome, google-chrome-stable found on PATH.
	ExecPath string
	// URL is a browser already running elsewhere (ws://host:port/devtools/browser/...,
	// or http://host:port to look it up), e.g. a browserless container; then no
	// process is started, and memory is neither measured nor capped. Its pages must
	// reach this process's page proxies: see ProxyListen and ProxyHost.
	URL string
	// Browsers is the most browsers the pool runs at once, a retiring one finishing its
	// last pages included. Default DefaultBrowsers.
	Browsers int
	// Tabs is the most pages one browser renders at once. Default DefaultTabs.
	Tabs int
	// RetireAfter replaces a browser once it has rendered this many pages. Default
	// DefaultRetireAfter.
	RetireAfter int
	// MaxMemory replaces a browser whose processes use more than this many bytes
	// (proportional set size of its process tree, read from /proc). Default
	// DefaultMaxMemory.
	MaxMemory int64
	// LaunchTimeout bounds a browser's start. Default DefaultLaunchTimeout.
	LaunchTimeout time.Duration
	// IdleTimeout closes a browser that rendered nothing for this long. Default
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// SampleInterval is how often memory is measured and idle browsers closed.
	// Default DefaultSampleInterval.
	SampleInterval time.Duration
	// MemoryAllowance is how far above MaxMemory a browser may go while it renders
	// pages: above MaxMemory it is retired (it finishes its pages), above MaxMemory +
	// MemoryAllowance it is killed at once and its pages fail (ErrBrowserLost, to be
	// fetched again). Default MaxMemory/2, at least DefaultMinMemoryAllowance.
	MemoryAllowance int64
	// PageSampleInterval is how often the memory of a browser rendering pages is
	// measured (a page's script can grow by hundreds of MB a second). Default
	// DefaultPageSampleInterval.
	PageSampleInterval time.Duration
	// IdleQuiet is how long a page must have no request in flight to be idle.
	// Default DefaultIdleQuiet.
	IdleQuiet time.Duration
	// ProxyListen is where page proxies listen (host:port, port 0). Default
	// 127.0.0.1:0; a remote browser needs an address it can reach.
	ProxyListen string
	// ProxyHost is the host a browser reaches the page proxies at. Default: the host
	// of ProxyListen.
	ProxyHost string
	// Dial opens the connections of what the browser loads outside any page (its own
	// requests, if any). Required: the fetcher's guarded dialer.
	Dial Dialer
	// Flags are more command-line flags for started browsers ("--lang=de").
	Flags []string
	// OnEvent is told of the pool's events, for counters: "browser_launches",
	// "browser_launch_failures", "browser_crashes", "browser_retired_pages",
	// "browser_retired_memory", "browser_retired_idle", "browser_killed_memory". Default
	// nil.
	OnEvent func(event string)
	// Logger receives what the pool has to say. Default nil: no-op.
	Logger *zap.Logger
}

func (c *Config) setDefaults() {
	conf.Positive(&c.Browsers, DefaultBrowsers)
	conf.Positive(&c.Tabs, DefaultTabs)
	conf.Positive(&c.RetireAfter, DefaultRetireAfter)
	conf.Positive(&c.MaxMemory, DefaultMaxMemory)
	conf.Positive(&c.LaunchTimeout, DefaultLaunchTimeout)
	conf.Positive(&c.IdleTimeout, DefaultIdleTimeout)
	conf.Positive(&c.SampleInterval, DefaultSampleInterval)
	conf.Positive(&c.MemoryAllowance, max(c.MaxMemory/2, DefaultMinMemoryAllowance))
	conf.Positive(&c.PageSampleInterval, min(DefaultPageSampleInterval, c.SampleInterval))
	conf.Positive(&c.IdleQuiet, DefaultIdleQuiet)
	if c.ProxyListen == "" {
		c.ProxyListen = "127.0.0.1:0"
	}
	if c.ProxyHost == "" {
		c.ProxyHost, _, _ = net.SplitHostPort(c.ProxyListen)
	}
	if c.OnEvent == nil {
		c.OnEvent = func(string) {}
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// Validate reports a Config New cannot use.
func (c *Config) Validate() error {
	if c.Dial == nil {
		return errors.New("browser: a pool needs a dialer (the fetcher's network guard)")
	}
	if _, _, err := net.SplitHostPort(c.ProxyListen); err != nil {
		return fmt.Errorf("browser: proxy listen address %q: %w", c.ProxyListen, err)
	}
	if c.URL != "" && !strings.HasPrefix(c.URL, "ws://") && !strings.HasPrefix(c.URL, "wss://") &&
		!strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
		return fmt.Errorf("browser: browser url %q: want ws://, wss://, http:// or https://", c.URL)
	}
	return nil
}

// ErrNoBrowser is returned when no browser binary is found and no URL is given.
var ErrNoBrowser = errors.New("browser: no chromium found on PATH (install Debian's chromium package, or give --browser-path or --browser-url)")

// FindChromium returns the path of the first of chromium, chromium-browser,
// google-chrome and google-chrome-stable found on PATH, or ErrNoBrowser.
func FindChromium() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}
