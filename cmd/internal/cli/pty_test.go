//go:build linux || darwin

package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/streamcrawl/streamcrawl/spiders/demosite"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// ttyProc is a streamcrawl process whose stdin, stdout and stderr are a
// pseudo-terminal, as when a person runs it in a terminal.
type ttyProc struct {
	cmd  *exec.Cmd
	tty  *os.File // the terminal's end: what a person types is written here
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	code int
}

func startTTY(t *testing.T, args ...string) *ttyProc {
	t.Helper()
	p := &ttyProc{cmd: exec.Command(os.Args[0], args...), done: make(chan struct{})}
	p.cmd.Env = childEnv(nil)
	f, err := pty.StartWithSize(p.cmd, &pty.Winsize{Rows: 40, Cols: 160})
	if err != nil {
		t.Fatalf("start on a pty: %v", err)
	}
	p.tty = f
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil { // EIO once the process has exited and closed the tty
				break
			}
		}
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		_ = f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("---- streamcrawl %s on a pty:\n%q", strings.Join(args, " "), tail(p.Output(), 6000))
		}
	})
	return p
}

// Output is what the process wrote to its terminal so far.
func (p *ttyProc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitFor waits until ok(output) or the process exits or timeout passes.
func (p *ttyProc) waitFor(timeout time.Duration, ok func(string) bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ok(p.Output()) {
			return true
		}
		select {
		case <-p.done:
			return ok(p.Output())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

func (p *ttyProc) wait(timeout time.Duration) (int, error) {
	select {
	case <-p.done:
		return p.code, nil
	case <-time.After(timeout):
		return 0, errors.New("still running")
	}
}

var (
	clearScreen = "\x1b[H\x1b[2J"
	watchRateRE = regexp.MustCompile(`rates \(last 10s\)\s+pages ([0-9.]+)/s\s+items ([0-9.]+)/s`)
	stageRowRE  = regexp.MustCompile(`(?m)^fetch\s+(\d+) of (\d+)\s+\d+`)
	progressRE  = regexp.MustCompile(`\r\x1b\[2K\d+s  pages (\d+)  items (\d+)  ([0-9.]+) pages/s  queue \d+  dead letters \d+`)
)

// TestStatusWatchOnATerminal watches a running multi-process crawl with
// `status --watch` on a pseudo-terminal: the screen is redrawn in place, shows non-zero
// rates and both fetchers alive; Ctrl-C ends it with exit 0.
func TestStatusWatchOnATerminal(t *testing.T) {
	t.Parallel()
	site := demosite.New(400)
	c := newCluster(t, "watch", slowSite{site, 300 * time.Millisecond}) // at least 2 s of waiting at 64 fetches at once
	c.seed()
	procs := c.start(2, 1, 1)
	w := startTTY(t, "status", "--watch", "--interval", "300ms", "--redis", c.srv.URL(), "--crawl", c.name)
	// Rates are over the last 10 s: a refresh after some pages shows them above zero.
	sawRate := w.waitFor(crawlTimeout, func(out string) bool {
		for _, m := range watchRateRE.FindAllStringSubmatch(out, -1) {
			if v, _ := strconv.ParseFloat(m[1], 64); v > 0 {
				return true
			}
		}
		return false
	})
	if !sawRate {
		t.Fatal("status --watch never showed a non-zero page rate during the crawl")
	}
	if !w.waitFor(30*time.Second, func(out string) bool { return strings.Count(out, clearScreen) >= 3 }) {
		t.Fatalf("status --watch redrew the screen %d times, want >= 3", strings.Count(w.Output(), clearScreen))
	}
	out := w.Output()
	last := out[strings.LastIndex(out, clearScreen):]
	t.Logf("%d refreshes; the last:\n%s", strings.Count(out, clearScreen), last)
	for _, want := range []string{"crawl watch", "frontier", "dead letters", "redis memory", "STAGE", "CONSUMERS ALIVE"} {
		if !strings.Contains(last, want) {
			t.Errorf("a refresh lacks %q:\n%s", want, last)
		}
	}
	if m := stageRowRE.FindStringSubmatch(last); m == nil || m[1] != "2" || m[2] != "2" {
		t.Errorf("fetch row of the last refresh = %v, want 2 of 2 consumers alive:\n%s", m, last)
	}
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code, err := w.wait(10 * time.Second); err != nil || code != 0 {
		t.Errorf("status --watch after Ctrl-C: exit %d, %v; want 0", code, err)
	}
	waitAll(t, crawlTimeout, c.rdb, c.name, procs...)
	checkExit0(t, procs...)
}

// TestCrawlProgressLine: `crawl` redraws one progress line in place on a terminal, and
// writes plain lines (no terminal control sequences) when its output is not one.
func TestCrawlProgressLine(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	site := demosite.New(250)
	base := serveSite(t, slowSite{site, 100 * time.Millisecond}) // at least 0.8 s at 32 fetches at once

	spider := writeFile(t, "tty.yaml", spiderYAML(t, site, "tty", base))
	p := startTTY(t, "crawl", spider, "--redis", srv.URL(), "--out", t.TempDir()+"/tty.jsonl", "--progress-interval", "200ms")
	if code, err := p.wait(crawlTimeout); err != nil || code != 0 {
		t.Fatalf("crawl on a pty: exit %d, %v", code, err)
	}
	out := p.Output()
	var pages int64
	for _, m := range progressRE.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		pages = max(pages, n)
	}
	if pages == 0 {
		t.Errorf("no progress line with pages > 0 on the terminal")
	}
	t.Logf("%d progress redraws on the terminal, last at %d pages", len(progressRE.FindAllString(out, -1)), pages)
	if !strings.Contains(out, "pages fetched") {
		t.Errorf("no summary after the progress line")
	}
	// The progress line is cleared before the summary, not left above it.
	if i, j := strings.LastIndex(out, "pages/s  queue"), strings.Index(out, "crawl tty: done=true"); i < 0 || j < i ||
		!strings.Contains(out[i:j], "\r\x1b[2K") {
		t.Errorf("the progress line is not cleared before the summary")
	}

	spider = writeFile(t, "plain.yaml", spiderYAML(t, site, "plain", base))
	code, stdout, stderr := runCLI(t, crawlTimeout, nil, "crawl", spider, "--redis", srv.URL(),
		"--out", t.TempDir()+"/plain.jsonl", "--progress-interval", "200ms")
	if code != 0 {
		t.Fatalf("crawl: exit %d\n%s", code, stderr)
	}
	if strings.Contains(stdout+stderr, "\x1b[") || strings.Contains(stdout+stderr, "\r") {
		t.Errorf("terminal control sequences in output that is not a terminal:\n%q", tail(stderr, 2000))
	}
	if !regexp.MustCompile(`(?m)^progress: \d+s  pages \d+  items \d+ `).MatchString(stderr) {
		t.Errorf("no plain progress lines on stderr:\n%s", tail(stderr, 2000))
	}
}
