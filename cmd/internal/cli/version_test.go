package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// TestVersionLine: the version line names the module version and, when the go command
// stamped it, the revision, its time and "modified"; without stamping it says the
// revision is unknown and why.
func TestVersionLine(t *testing.T) {
	t.Parallel()
	stamped := func(modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/streamcrawl/streamcrawl", Version: "v0.0.0-20261207160000-0123abcd4567"},
			Settings: []debug.BuildSetting{{Key: "-buildmode", Value: "exe"}, {Key: "vcs", Value: "git"},
				{Key: "vcs.revision", Value: "0123abcd4567ef"}, {Key: "vcs.time", Value: "2026-12-07T16:00:00Z"}, {Key: "vcs.modified", Value: modified}}}
	}
	tests := []struct {
		info *debug.BuildInfo
		want string
	}{
		{stamped("true"), "streamcrawl v0.0.0-20261207160000-0123abcd4567 (revision 0123abcd4567ef, 2026-12-07T16:00:00Z, modified)"},
		{stamped("false"), "streamcrawl v0.0.0-20261207160000-0123abcd4567 (revision 0123abcd4567ef, 2026-12-07T16:00:00Z)"},
		{&debug.BuildInfo{Main: debug.Module{Path: "github.com/streamcrawl/streamcrawl", Version: "(devel)"}},
			"streamcrawl (devel) (revision unknown: built without VCS stamping (go build -buildvcs=true, in a git clone))"},
		{nil, "streamcrawl (unknown version) (revision unknown: the binary carries no build information)"},
	}
	for _, tt := range tests {
		if got := versionLine("streamcrawl", tt.info); got != tt.want {
			t.Errorf("versionLine (-want +got):\n-%s\n+%s", tt.want, got)
		}
	}
	// A test binary is not stamped: both forms say so.
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, stderr := runInProcess(args...)
		if code != 0 || !strings.HasPrefix(stdout, "streamcrawl ") || !strings.Contains(stdout, noVCS) {
			t.Errorf("streamcrawl %s: exit %d, stdout %q, stderr %q; want the version and %q", args[0], code, stdout, stderr, noVCS)
		}
	}
}

// TestVersionOfABuiltBinary builds cmd/streamcrawl with VCS stamping and checks that
// `version` and `--version` print the checkout's revision (git rev-parse HEAD), and
// "modified" exactly when git status showed changes. In a git worktree, which the go
// command does not stamp, it checks that the binary says its revision is unknown
// instead of making one up.
func TestVersionOfABuiltBinary(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is not on PATH: this test builds streamcrawl with VCS stamping, which needs git (%v)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	git := func(args ...string) string {
		out, err := exec.CommandContext(ctx, "git", args...).Output()
		if err != nil {
			t.Fatalf("git %s: %v (the test needs the repository's git checkout)", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	root := git("rev-parse", "--show-toplevel")
	head := git("rev-parse", "HEAD")
	statusBefore := git("status", "--porcelain")
	bin := filepath.Join(t.TempDir(), "streamcrawl")
	build := exec.CommandContext(ctx, "go", "build", "-buildvcs=true", "-o", bin, "./cmd/streamcrawl")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true ./cmd/streamcrawl: %v\n%s", err, out)
	}
	statusAfter := git("status", "--porcelain")
	fi, err := os.Stat(filepath.Join(root, ".git"))
	worktree := err == nil && !fi.IsDir()
	if worktree {
		t.Logf("%s is a git worktree, which the go command does not stamp: checking that the revision is said to be unknown", root)
	}
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.CommandContext(ctx, bin, arg).Output()
		line := strings.TrimSpace(string(out))
		if err != nil || !strings.HasPrefix(line, "streamcrawl ") {
			t.Errorf("streamcrawl %s: %v, output %q; want a line starting with streamcrawl", arg, err, line)
			continue
		}
		switch {
		case worktree:
			if !strings.Contains(line, noVCS) || strings.Contains(line, head) {
				t.Errorf("streamcrawl %s in a worktree: %q, want %q", arg, line, noVCS)
			}
		case !strings.Contains(line, "(revision "+head+", "):
			t.Errorf("streamcrawl %s: %q, want the revision %s (git rev-parse HEAD)", arg, line, head)
		case statusBefore == statusAfter && strings.HasSuffix(line, ", modified)") != (statusBefore != ""):
			t.Errorf("streamcrawl %s: %q, want \"modified\" exactly when git status --porcelain shows changes; it shows:\n%s", arg, line, statusBefore)
		}
	}
}
