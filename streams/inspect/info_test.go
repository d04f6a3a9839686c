package inspect_test

import (
	"context"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams/inspect"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

func TestInfoNumbers(t *testing.T) {
	srv := streamstest.Start(t)
	rdb := srv.Client()
	ctx := context.Background()
	if err := rdb.Set(ctx, "k", "some value", 0).Err(); err != nil {
		t.Fatal(err)
	}
	info, err := inspect.InfoNumbers(ctx, rdb, "memory", "stats")
	if err != nil {
		t.Fatal(err)
	}
	if info["used_memory"] <= 0 || info["total_commands_processed"] < 1 {
		t.Fatalf("used_memory %v, total_commands_processed %v: want both read", info["used_memory"], info["total_commands_processed"])
	}
	if _, ok := info["maxmemory_policy"]; ok {
		t.Error("a text field (maxmemory_policy) among the numbers")
	}
	if cpu := srv.UsedCPU(); cpu <= 0 {
		t.Errorf("UsedCPU = %v, want the server's CPU seconds", cpu)
	}
	srv.Kill()
	if _, err := inspect.InfoNumbers(ctx, rdb, "memory"); err == nil {
		t.Error("INFO of a stopped server: no error")
	}
}
