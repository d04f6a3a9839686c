package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestBrowserFlags: no browser flag gives no pool settings (the defaults apply);
// given ones are passed on; a bad size is an error naming the flag.
func TestBrowserFlags(t *testing.T) {
	parse := func(args ...string) (*browserFlags, error) {
		var b browserFlags
		fl := pflag.NewFlagSet("x", pflag.ContinueOnError)
		b.add(fl)
		return &b, fl.Parse(args)
	}
	b, _ := parse()
	if cfg, err := b.config(); cfg != nil || err != nil {
		t.Errorf("no flags: %+v, %v", cfg, err)
	}
	b, _ = parse("--browsers", "3", "--browser-tabs", "2", "--browser-max-memory", "512MB", "--browser-url", "ws://x:9222/")
	cfg, err := b.config()
	if err != nil || cfg.Browsers != 3 || cfg.Tabs != 2 || cfg.MaxMemory != 512<<20 || cfg.URL != "ws://x:9222/" || cfg.RetireAfter != 100 {
		t.Errorf("flags given: %+v, %v", cfg, err)
	}
	b, _ = parse("--browser-max-memory", "lots")
	if _, err := b.config(); err == nil || !strings.Contains(err.Error(), "--browser-max-memory") {
		t.Errorf("bad size: %v", err)
	}
}
