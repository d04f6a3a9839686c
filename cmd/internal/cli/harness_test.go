package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// mainEnv makes the test binary behave as the streamcrawl binary (see TestMain), so that
// tests run real worker processes of this build (with or without the race detector:
// childBinary).
const mainEnv = "STREAMCRAWL_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		// The same as main(): SIGINT/SIGTERM cancel the context for a graceful stop,
		// go-redis's own log is quiet and the collector runs with the binary's defaults.
		ctx, stop := Process()
		code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	dir, err := os.MkdirTemp("", "streamcrawl-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := buildPlainBinary(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// Env variables a worker never inherits from the test's environment: each test says
// what it wants.
var scrubbedEnv = []string{mainEnv, "REDIS_URL", redisWaitEnv, faultEnv}

// proc is a streamcrawl process started by a test: a re-exec of the test binary.
type proc struct {
	t       testing.TB
	name    string
	args    []string
	cmd     *exec.Cmd
	outPath string
	errPath string
	started time.Time
	done    chan struct{}
	code    int // exit code; -1 when killed by a signal
}

// startProc starts `streamcrawl args...` with env (KEY=VALUE) added to the test's
// environment minus scrubbedEnv. Its stdout and stderr go to files in a temp directory,
// printed when the test fails. The process is killed (SIGKILL) when the test ends.
func startProc(t testing.TB, name string, env []string, args ...string) *proc {
	t.Helper()
	dir := t.TempDir()
	p := &proc{t: t, name: name, args: args, done: make(chan struct{}),
		outPath: filepath.Join(dir, name+".stdout"), errPath: filepath.Join(dir, name+".stderr")}
	stdout, err := os.Create(p.outPath)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(p.errPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(childBinary(t), args...)
	p.cmd.Env = childEnv(env)
	p.cmd.Stdout, p.cmd.Stderr = stdout, stderr
	p.cmd.SysProcAttr = procAttr()
	p.started = time.Now()
	err = p.cmd.Start()
	_ = stdout.Close()
	_ = stderr.Close()
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		running := !p.Exited()
		p.Kill()
		if t.Failed() {
			p.dump(running)
		}
	})
	return p
}

func childEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, s := range scrubbedEnv {
			if k == s {
				keep = false
			}
		}
		if keep {
			env = append(env, kv)
		}
	}
	return append(append(env, mainEnv+"=1"), extra...)
}

// Wait waits up to timeout for the process to exit and returns its exit code; ok is
// false when it is still running.
func (p *proc) Wait(timeout time.Duration) (code int, ok bool) {
	select {
	case <-p.done:
		return p.code, true
	case <-time.After(timeout):
		return 0, false
	}
}

// Exited reports whether the process has exited.
func (p *proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill kills the process with SIGKILL and waits for it; a no-op once it has exited.
func (p *proc) Kill() {
	if !p.Exited() {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// Signal sends sig to the process.
func (p *proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Stdout returns what the process has written to stdout so far.
func (p *proc) Stdout() string { b, _ := os.ReadFile(p.outPath); return string(b) }

// Stderr returns what the process has written to stderr so far.
func (p *proc) Stderr() string { b, _ := os.ReadFile(p.errPath); return string(b) }

// waitStderr waits until the process's stderr contains s; false if it exits without
// writing it or timeout passes.
func (p *proc) waitStderr(s string, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if strings.Contains(p.Stderr(), s) {
			return true
		}
		if p.Exited() {
			return strings.Contains(p.Stderr(), s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// dump logs the process's command line, exit status and the tail of its output;
// killed says it was still running when the test ended.
func (p *proc) dump(killed bool) {
	status := fmt.Sprintf("exit %d, %s CPU", p.code, (p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()).Round(time.Millisecond))
	if killed {
		status = fmt.Sprintf("still running after %s: killed", time.Since(p.started).Round(time.Millisecond))
	}
	p.t.Logf("---- %s: streamcrawl %s (%s)\n---- stdout:\n%s\n---- stderr:\n%s", p.name,
		strings.Join(p.args, " "), status, tail(p.Stdout(), 4<<10), tail(p.Stderr(), 12<<10))
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "[...]\n" + s
}

// waitAll waits until every process has exited, failing the test after timeout (with
// the crawl status when rdb is not nil). It returns how long it took.
func waitAll(t testing.TB, timeout time.Duration, rdb redis.UniversalClient, crawl string, procs ...*proc) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for _, p := range procs {
		if _, ok := p.Wait(time.Until(deadline)); !ok {
			var running []string
			for _, q := range procs {
				if !q.Exited() {
					running = append(running, q.name)
				}
			}
			if rdb != nil {
				logStatus(t, rdb, crawl)
			}
			t.Fatalf("still running after %s: %v", timeout, running)
		}
	}
	return time.Since(start)
}

// runCLI runs `streamcrawl args...` as a process, waits up to timeout and returns its
// exit code and output.
func runCLI(t testing.TB, timeout time.Duration, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := startProc(t, "cli-"+sanitize(strings.Join(args, "_")), env, args...)
	code, ok := p.Wait(timeout)
	if !ok {
		p.Kill()
		t.Fatalf("streamcrawl %s: still running after %s\nstderr:\n%s", strings.Join(args, " "), timeout, tail(p.Stderr(), 4<<10))
	}
	return code, p.Stdout(), p.Stderr()
}

func sanitize(s string) string {
	s = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

// serveSite serves h on 127.0.0.1 until the test ends and returns its base URL
// ("http://127.0.0.1:port/").
func serveSite(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test site at %s, want 127.0.0.1", srv.URL)
	}
	return srv.URL + "/"
}

// writeFile writes content to name in a temp directory and returns the path.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// readItems reads a JSONL items file, one object per line.
func readItems(t testing.TB, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("items file: %v", err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s:%d: not a JSON object: %v: %q", path, n, err, tail(sc.Text(), 200))
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return out
}

// checkItems compares the items of a JSONL file with the expected ones: every line has
// _type typ, a non-empty _url and an RFC 3339 _crawled_at; there is one line per value
// of the key field; and the set of expected fields of the lines equals want.
func checkItems(t testing.TB, lines []map[string]any, want []map[string]string, typ, key string) {
	t.Helper()
	var fields []string
	if len(want) > 0 {
		for f := range want[0] {
			fields = append(fields, f)
		}
		sort.Strings(fields)
	}
	row := func(get func(string) string) string {
		parts := make([]string, len(fields))
		for i, f := range fields {
			parts[i] = f + "=" + get(f)
		}
		return strings.Join(parts, " ")
	}
	bad, dups := 0, 0
	keys := map[string]int{}
	got := map[string]int{}
	for i, l := range lines {
		if l["_type"] != typ || str(l["_url"]) == "" || !isRFC3339(str(l["_crawled_at"])) {
			if bad++; bad <= 5 {
				t.Errorf("item line %d: _type=%v _url=%v _crawled_at=%v, want _type=%s, a URL and an RFC 3339 time",
					i+1, l["_type"], l["_url"], l["_crawled_at"], typ)
			}
		}
		k := str(l[key])
		if keys[k]++; keys[k] == 2 {
			if dups++; dups <= 5 {
				t.Errorf("item %s=%s is in the file more than once", key, k)
			}
		}
		got[row(func(f string) string { return str(l[f]) })]++
	}
	if dups > 0 {
		t.Errorf("%d keys are in the items file more than once (%d lines, %d keys)", dups, len(lines), len(keys))
	}
	wantSet := map[string]int{}
	for _, w := range want {
		wantSet[row(func(f string) string { return w[f] })]++
	}
	if d := diffCounts(wantSet, got, 40); d != "" {
		t.Errorf("items (%d lines, want %d) (-want +got):\n%s", len(lines), len(want), d)
	}
}

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return "<nil>"
	case string:
		return v
	}
	return fmt.Sprint(v)
}

func isRFC3339(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// diffCounts returns a (-want +got) listing of the keys whose counts differ (a missing
// key counts 0), sorted, at most max lines; "" when equal.
func diffCounts(want, got map[string]int, max int) string {
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		if want[k] != got[k] {
			sorted = append(sorted, k)
		}
	}
	sort.Strings(sorted)
	var b strings.Builder
	for i, k := range sorted {
		if i == max {
			fmt.Fprintf(&b, "... and %d more differences\n", len(sorted)-max)
			break
		}
		switch w, g := want[k], got[k]; {
		case g == 0:
			fmt.Fprintf(&b, "-%s (x%d)\n", k, w)
		case w == 0:
			fmt.Fprintf(&b, "+%s (x%d)\n", k, g)
		default:
			fmt.Fprintf(&b, "-%s (x%d)\n+%s (x%d)\n", k, w, k, g)
		}
	}
	return b.String()
}

// setOf returns the strings as a set with count 1 each.
func setOf(ss []string) map[string]int {
	m := make(map[string]int, len(ss))
	for _, s := range ss {
		m[s] = 1
	}
	return m
}
