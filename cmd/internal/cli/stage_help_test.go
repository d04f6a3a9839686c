package cli

import (
	"slices"
	"strings"
	"testing"
)

// TestEachCommandListsItsOwnFlags: a command that runs stages, or reads a crawl's
// streams in a group of its own, lists the flags it uses and no other (store no browser
// flags, parse no --out), and store's help says what --out takes.
func TestEachCommandListsItsOwnFlags(t *testing.T) {
	t.Parallel()
	browser := []string{"browser-path", "browser-url", "browsers", "browser-tabs", "browser-retire-after", "browser-max-memory",
		"browser-proxy-listen", "browser-proxy-host"}
	consumer := []string{"consumer", "shutdown-timeout", "max-deliveries", "retry-backoff", "min-idle", "claim-interval"}
	stage := append([]string{"trim-interval", "durability", "continuous", "idle-window", "metrics-addr", "until-done"}, consumer...)
	for _, tt := range []struct {
		cmd       string
		has, lack []string
	}{
		{"fetch", append([]string{"retain-requests", "retain-responses", "max-backlog"}, append(browser, stage...)...),
			[]string{"out", "retain-items"}},
		{"parse", append([]string{"retain-responses"}, stage...),
			append([]string{"out", "retain-requests", "retain-items", "max-backlog"}, browser...)},
		{"store", append([]string{"out", "retain-items"}, stage...),
			append([]string{"retain-requests", "retain-responses", "max-backlog"}, browser...)},
		{"crawl", append([]string{"out", "retain-requests", "retain-responses", "retain-items", "max-backlog"}, append(browser, stage[:5]...)...), nil},
		{"archive", consumer, append([]string{"retain-items", "retain-responses", "max-backlog", "trim-interval", "durability"}, browser...)},
		{"process", append([]string{"out"}, consumer...), append([]string{"retain-items", "max-backlog", "trim-interval", "durability"}, browser...)},
	} {
		c, _, err := (&App{}).rootCommand().Find([]string{tt.cmd})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range tt.has {
			if c.Flags().Lookup(f) == nil {
				t.Errorf("%s has no --%s", tt.cmd, f)
			}
		}
		for _, f := range tt.lack {
			if c.Flags().Lookup(f) != nil {
				t.Errorf("%s has --%s, which it does not use", tt.cmd, f)
			}
		}
	}
	code, stdout, _ := runInProcess("store", "--help")
	if code != 0 || strings.Contains(stdout, "JSONL file)") || !strings.Contains(stdout, "sink (--out: a JSONL or CSV file, or a PostgreSQL table)") ||
		slices.ContainsFunc(browser, func(f string) bool { return strings.Contains(stdout, "--"+f+" ") }) {
		t.Errorf("store --help: exit %d:\n%s\nwant the sinks --out takes and no browser flag", code, stdout)
	}
}
