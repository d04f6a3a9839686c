package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// mainEnv makes the test binary behave as the streamcrawl-bench binary (see TestMain):
// the worker processes a chaos run starts are this test binary, race detector included.
const mainEnv = "STREAMCRAWL_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		// The same as main(): SIGINT/SIGTERM cancel the context for a graceful stop.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
