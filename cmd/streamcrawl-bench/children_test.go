package main

import (
	"context"
	"strings"
	"testing"
)

// TestAChildStartsNoChildren: a process the bench started as itself (childEnv set) is
// refused a child of its own, whatever the path asking: a runaway spawn loop once started
// hundreds of demo sites.
func TestAChildStartsNoChildren(t *testing.T) {
	t.Setenv(childEnv, "1")
	ctx := context.Background()
	if c, _, err := startSiteChild(ctx, 10); err == nil || !strings.Contains(err.Error(), "recursive spawn") {
		c.stop()
		t.Fatalf("a child started a demo site: err %v", err)
	}
	if _, err := runChaos(ctx, chaosOptions{}); err == nil || !strings.Contains(err.Error(), "recursive spawn") {
		t.Fatalf("a child started a chaos run: err %v", err)
	}
}
