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
	out := runBenchDedup(t, "--urls", "20000", "--batch", "500", "--redis", srv.URL())
	t.Logf("\n%s", out)
	for _, want := range []string{"exact:", "bloom:", "set:", "dedup + enqueue", "| exact", "| bloom", "| set", "false positives"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if keys := srv.Client().Keys(context.Background(), "*").Val(); len(keys) != 0 {
		t.Errorf("bench-dedup left keys: %v", keys[:min(len(keys), 10)])
	}
}

// TestBenchDedupOwnServer: without --redis, bench-dedup starts its own servers.
func TestBenchDedupOwnServer(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	out := runBenchDedup(t, "--urls", "3000", "--mode", "bloom", "--enqueue=false")
	if !strings.Contains(out, "throw-away redis-server") || !strings.Contains(out, "| bloom") || strings.Contains(out, "| exact") {
		t.Fatalf("output:\n%s", out)
	}
}

func runBenchDedup(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	args = append([]string{"bench-dedup", "--log-level", "error"}, args...)
	if code := Run(context.Background(), args, &out, &errb); code != 0 {
		t.Fatalf("%v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out.String(), errb.String())
	}
	return out.String()
}
