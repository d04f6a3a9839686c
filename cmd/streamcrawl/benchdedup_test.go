package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestBenchDedup runs bench-dedup small against a real Redis and checks that every mode
// reports its figures and leaves no key behind.
func TestBenchDedup(t *testing.T) {
	srv := streamstest.Start(t)
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, logLevel: "error", logFormat: "console"}
	if err := a.setupLogger(); err != nil {
		t.Fatal(err)
	}
	cmd := a.benchDedupCommand()
	cmd.SetArgs([]string{"--urls", "20000", "--batch", "500", "--redis", srv.URL()})
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("bench-dedup: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	t.Logf("\n%s", out.String())
	for _, want := range []string{"exact:", "bloom:", "set:", "dedup + enqueue", "| exact", "| bloom", "| set", "false positives"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if keys := srv.Client().Keys(context.Background(), "*").Val(); len(keys) != 0 {
		t.Errorf("bench-dedup left keys: %v", keys[:min(len(keys), 10)])
	}
}
