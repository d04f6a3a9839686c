// Package browsertest helps tests that drive a real browser: it finds Chromium (and
// fails under CI when there is none, since CI installs it), counts the Chromium
// processes a test leaves, and gives a dialer that allows loopback addresses but the
// ones a test forbids, standing in for the fetcher's network guard.
package browsertest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
)

// Chromium returns the path of a Chromium or Chrome binary. Without one the test
// fails when CI is set (CI installs Debian's chromium package) and is skipped
// otherwise.
func Chromium(t testing.TB) string {
	t.Helper()
	p, err := browser.FindChromium()
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium in PATH: .ci/run installs Debian's chromium package")
	}
	t.Skip("no chromium in PATH (apt-get install chromium); CI fails instead of skipping")
	return ""
}

// Dialer returns a dialer that refuses (with browser.ErrBlocked) every address
// outside 127.0.0.0/8 and every host:port in forbidden, and dials the rest.
func Dialer(forbidden ...string) browser.Dialer {
	deny := map[string]bool{}
	for _, f := range forbidden {
		deny[f] = true
	}
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if deny[addr] {
			return nil, fmt.Errorf("%w: %s is forbidden", browser.ErrBlocked, addr)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("%w: %s is not loopback", browser.ErrBlocked, addr)
		}
		return d.DialContext(ctx, network, addr)
	}
}

// Processes returns the Chromium processes (zombies included) that are this
// process's descendants, as "pid state name" lines.
func Processes() []string {
	var out []string
	for _, p := range chromeDescendants(os.Getpid()) {
		out = append(out, fmt.Sprintf("%d %c %s", p.PID, p.State, p.Comm))
	}
	return out
}

// Browsers returns the PIDs of the browsers process pid started: its Chromium
// children that are browser processes (no --type=: not a renderer or zygote; not a
// crash handler) and not zombies.
func Browsers(pid int) []int {
	var out []int
	for _, p := range chromeDescendants(pid) {
		if p.PPID != pid || p.State == 'Z' || strings.Contains(p.Comm, "crashpad") {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cmdline")
		if err == nil && !strings.Contains(string(cmdline), "--type=") {
			out = append(out, p.PID)
		}
	}
	return out
}

// chromeDescendants returns the Chromium processes descending from root.
func chromeDescendants(root int) []browser.Process {
	procs := browser.Processes()
	byPID := make(map[int]browser.Process, len(procs))
	for _, p := range procs {
		byPID[p.PID] = p
	}
	var out []browser.Process
	for _, pid := range browser.Descendants(procs, root) {
		if p := byPID[pid]; pid != root && browser.IsChromium(p.Comm) {
			out = append(out, p)
		}
	}
	return out
}
