package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// run runs the streamcrawl-bench command line in this process.
func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestHelpListsTheToolingOnly: --help lists the six tooling commands and none of the
// worker commands the tooling runs as its children, which still run (hidden).
func TestHelpListsTheToolingOnly(t *testing.T) {
	code, stdout, stderr := run("--help")
	if code != 0 {
		t.Fatalf("--help: exit %d\n%s", code, stderr)
	}
	_, cmds, _ := strings.Cut(stdout, "Available Commands:\n")
	cmds, _, _ = strings.Cut(cmds, "\n\n")
	var names []string
	for _, l := range strings.Split(cmds, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "help" && f[0] != "completion" {
			names = append(names, f[0])
		}
	}
	if got, want := strings.Join(names, " "), "bench bench-broad bench-dedup bench-frontier bench-latency bench-memory bench-peers bench-render bench-scale chaos figures fleet plots testprogress"; got != want {
		t.Errorf("streamcrawl-bench --help lists %q, want %q\n%s", got, want, stdout)
	}
	for _, worker := range []string{"fetch", "parse", "store", "demo-site", "js-site", "worker", "submit"} {
		code, out, errOut := run(worker, "--help")
		if code != 0 || !strings.Contains(out, "Usage:\n  streamcrawl-bench "+worker) {
			t.Errorf("streamcrawl-bench %s --help: exit %d, stdout:\n%s\nstderr:\n%s", worker, code, out, errOut)
		}
	}
	if code, _, errOut := run("status"); code != 1 || !strings.Contains(errOut, `unknown command "status"`) {
		t.Errorf("streamcrawl-bench status: exit %d, stderr %q; want 1 and unknown command (operator commands are streamcrawl's)", code, errOut)
	}
}
