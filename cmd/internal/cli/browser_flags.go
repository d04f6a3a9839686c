package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// browserFlags are the flags of a fetch process's browsers, for pages that ask to be
// rendered.
type browserFlags struct {
	path, url, maxMemory        string
	proxyListen, proxyHost      string
	browsers, tabs, retireAfter int
	set                         func() bool // any of them given
}

func (b *browserFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&b.path, "browser-path", "", "the Chromium or Chrome binary that renders pages (default: chromium, chromium-browser or google-chrome on PATH)")
	fl.StringVar(&b.url, "browser-url", "", "render in a browser running elsewhere instead (ws://host:port/devtools/browser/..., or http://host:port)")
	fl.IntVar(&b.browsers, "browsers", browser.DefaultBrowsers, "browsers this fetch process runs at most")
	fl.IntVar(&b.tabs, "browser-tabs", browser.DefaultTabs, "pages one browser renders at once")
	fl.IntVar(&b.retireAfter, "browser-retire-after", browser.DefaultRetireAfter, "pages a browser renders before it is replaced")
	fl.StringVar(&b.maxMemory, "browser-max-memory", "1GB", "memory (PSS of its processes) above which a browser is replaced")
	fl.StringVar(&b.proxyListen, "browser-proxy-listen", "127.0.0.1:0", "where the page proxies every rendered request goes through listen (a --browser-url browser on another machine must reach them)")
	fl.StringVar(&b.proxyHost, "browser-proxy-host", "", "the host a --browser-url browser reaches the page proxies at (default: the host of --browser-proxy-listen)")
	b.set = func() bool {
		for _, n := range []string{"browser-path", "browser-url", "browsers", "browser-tabs", "browser-retire-after", "browser-max-memory",
			"browser-proxy-listen", "browser-proxy-host"} {
			if fl.Changed(n) {
				return true
			}
		}
		return false
	}
}

// config returns the pool settings the flags give; nil when none was given (the
// defaults, with a browser found on PATH).
func (b *browserFlags) config() (*browser.Config, error) {
	if b.set == nil || !b.set() {
		return nil, nil
	}
	mem, err := spiders.ParseByteSize(b.maxMemory)
	if err != nil {
		return nil, fmt.Errorf("--browser-max-memory: %w", err)
	}
	return &browser.Config{ExecPath: b.path, URL: b.url, Browsers: b.browsers, Tabs: b.tabs, RetireAfter: b.retireAfter,
		MaxMemory: int64(mem), ProxyListen: b.proxyListen, ProxyHost: b.proxyHost}, nil
}
