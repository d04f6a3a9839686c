package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// testEvent is one line of `go test -json` (cmd/test2json's TestEvent).
type testEvent struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// testProgress turns the `go test -json` stream into a line per ended test and package,
// each with the time since the run began, and keeps the output of what failed.
type testProgress struct {
	out     io.Writer
	start   time.Time
	slowest int

	quiet   time.Duration        // print the packages running after this long without a line
	printed time.Time            // when the last line was printed
	running map[string]time.Time // package -> when its test binary started

	output  map[string][]string // package + "\x00" + test -> output lines, until it ends
	tests   []testTime          // every ended top-level test
	pkgs    []testTime          // every ended package
	failed  []string            // "pkg TestName" or "pkg" for each failure
	failOut map[string][]string // failure -> its output, printed again at the end
	skipped int
}

// failTail is how many lines of each failure's output the summary repeats.
const failTail = 40

// whyLines is how many of a failed test's own lines (its t.Error and t.Log lines) the
// summary's last block shows, whyWidth how wide each is at most.
const (
	whyLines = 5
	whyWidth = 240
)

// testLine matches a line a test wrote itself: "    name_test.go:123: message".
var testLine = regexp.MustCompile(`^\s*[\w.-]+_test\.go:\d+: `)

// testTime is how long one test or package took.
type testTime struct {
	name    string
	elapsed float64
}

func (a *app) testProgressCommand() *cobra.Command {
	var slowest int
	var quiet time.Duration
	cmd := &cobra.Command{
		Use:   "testprogress [--slowest N] < go-test-json",
		Short: "Print a line per ended test and package from `go test -json` on stdin",
		Long: `testprogress reads the output of go test -json on stdin and prints a line as each
top-level test and each package ends, with its own time and the time since the run began,
so a long test run shows it is alive; after --quiet without a line it prints the packages
running and for how long (or that go test is still compiling). The output of a failed test or package is printed in
full when it ends. At the end it prints the slowest packages and tests, the last 40 lines
of each failure again, then, last, each failed test's own last 5 lines (its t.Error and
t.Log lines, any panic), and exits non-zero
when anything failed (or the stream held no package result).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if quiet <= 0 {
				return fmt.Errorf("testprogress: --quiet must be positive, got %v", quiet)
			}
			p := &testProgress{out: cmd.OutOrStdout(), start: time.Now(), slowest: slowest, quiet: quiet,
				output: map[string][]string{}, failOut: map[string][]string{}, running: map[string]time.Time{}}
			return p.run(a.Stdin)
		},
	}
	cmd.Flags().IntVar(&slowest, "slowest", 10, "print the N slowest packages and tests at the end")
	cmd.Flags().DurationVar(&quiet, "quiet", 30*time.Second, "after this long without a line, print the packages running (or that go test compiles)")
	return cmd
}

// run reads events until stdin ends, then prints the summary. When nothing was printed
// for quiet, it prints the packages running and for how long (or that go test is still
// compiling), so the slow start of a -race build and a long test show it is alive.
func (p *testProgress) run(in io.Reader) error {
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			lines <- slices.Clone(sc.Bytes())
		}
		close(lines)
		readErr <- sc.Err()
	}()
	tick := time.NewTicker(p.quiet / 3)
	defer tick.Stop()
	p.printed = time.Now()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				if err := <-readErr; err != nil {
					return fmt.Errorf("testprogress: read: %w", err)
				}
				return p.summary()
			}
			var ev testEvent
			if err := json.Unmarshal(line, &ev); err != nil || ev.Action == "" {
				p.printf("%s\n", line) // not an event (a build error on stderr merged in)
				continue
			}
			p.event(ev)
		case <-tick.C:
			if time.Since(p.printed) >= p.quiet {
				p.alive()
			}
		}
	}
}

// alive prints the packages running and since when, or that go test is compiling.
func (p *testProgress) alive() {
	if len(p.running) == 0 {
		p.printf("[%s] compiling (no test binary running yet)\n", p.since())
		return
	}
	names := make([]string, 0, len(p.running))
	for pkg, start := range p.running {
		names = append(names, fmt.Sprintf("%s for %s", pkg, time.Since(start).Round(time.Second)))
	}
	slices.Sort(names)
	p.printf("[%s] running %s\n", p.since(), strings.Join(names, ", "))
}

// printf prints and notes when it last did.
func (p *testProgress) printf(format string, args ...any) {
	fmt.Fprintf(p.out, format, args...)
	p.printed = time.Now()
}

// event handles one test2json event.
func (p *testProgress) event(ev testEvent) {
	if ev.Action == "build-output" {
		p.printf("%s", ev.Output) // a compile error: shown as it comes
		return
	}
	top, _, sub := strings.Cut(ev.Test, "/")
	key := ev.Package + "\x00" + top // a subtest's output belongs to its top-level test
	switch ev.Action {
	case "start":
		p.running[ev.Package] = time.Now()
	case "output":
		p.output[key] = append(p.output[key], ev.Output)
	case "pass", "fail", "skip":
		if sub {
			return // a subtest ends inside its test's line
		}
		name, kind := ev.Package, "package "
		if ev.Test != "" {
			name, kind = ev.Package+" "+ev.Test, ""
			p.tests = append(p.tests, testTime{name, ev.Elapsed})
		} else {
			p.pkgs = append(p.pkgs, testTime{name, ev.Elapsed})
			delete(p.running, ev.Package)
		}
		verb := map[string]string{"pass": "ok  ", "fail": "FAIL", "skip": "SKIP"}[ev.Action]
		p.printf("[%s] %s %s%s %.2fs\n", p.since(), verb, kind, name, ev.Elapsed)
		switch ev.Action {
		case "fail":
			p.failed = append(p.failed, name)
			p.failOut[name] = p.output[key]
			if ev.Test == "" {
				// A package that failed with tests still running (a panic, a timeout):
				// their output is where it says why.
				p.failOut[name] = append(p.unended(ev.Package), p.failOut[name]...)
			}
			for _, l := range p.output[key] {
				p.printf("    %s", l)
			}
		case "skip":
			if ev.Test != "" {
				p.skipped++
			}
		}
		delete(p.output, key)
	}
}

// unended returns the output of pkg's tests that started and never ended, and forgets it.
func (p *testProgress) unended(pkg string) []string {
	var keys []string
	for k := range p.output {
		if strings.HasPrefix(k, pkg+"\x00") && k != pkg+"\x00" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		out = append(out, p.output[k]...)
		delete(p.output, k)
	}
	return out
}

// since is the time since the run began, as 3m07s.
func (p *testProgress) since() string {
	d := time.Since(p.start).Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// summary prints the slowest packages and tests and the failures, and returns an error
// when anything failed.
func (p *testProgress) summary() error {
	for _, list := range []struct {
		what  string
		times []testTime
	}{{"packages", p.pkgs}, {"tests", p.tests}} {
		times := slices.Clone(list.times)
		slices.SortFunc(times, func(a, b testTime) int {
			if a.elapsed != b.elapsed {
				if a.elapsed > b.elapsed {
					return -1
				}
				return 1
			}
			return strings.Compare(a.name, b.name)
		})
		if len(times) > p.slowest {
			times = times[:p.slowest]
		}
		if len(times) > 0 {
			fmt.Fprintf(p.out, "slowest %s:\n", list.what)
		}
		for _, t := range times {
			fmt.Fprintf(p.out, "  %8.1fs %s\n", t.elapsed, t.name)
		}
	}
	// The failures' output again, last, where a log that keeps only the tail of a long
	// run (a CI page) still shows why.
	for _, f := range p.failed {
		lines := p.failOut[f]
		if len(lines) > failTail {
			fmt.Fprintf(p.out, "--- %s failed (the last %d of %d lines):\n", f, failTail, len(lines))
			lines = lines[len(lines)-failTail:]
		} else {
			fmt.Fprintf(p.out, "--- %s failed:\n", f)
		}
		for _, l := range lines {
			fmt.Fprintf(p.out, "    %s", l)
		}
	}
	p.why()
	failedTests := 0
	for _, f := range p.failed {
		if strings.Contains(f, " ") {
			failedTests++
		}
	}
	fmt.Fprintf(p.out, "[%s] %d packages (%d failed), %d tests (%d failed, %d skipped)\n",
		p.since(), len(p.pkgs), len(p.failed)-failedTests, len(p.tests), failedTests, p.skipped)
	if len(p.failed) > 0 {
		return fmt.Errorf("testprogress: failed: %s", strings.Join(p.failed, ", "))
	}
	if len(p.pkgs) == 0 {
		return fmt.Errorf("testprogress: no package result on stdin (did go test start?)")
	}
	return nil
}

// why prints, last, a short block of each failure's own words: the last whyLines lines a
// test wrote (t.Error, t.Fatal, t.Log: not a harness's dump of a process's output, whose
// lines begin with "----") and any panic line, each cut at whyWidth. A CI page that keeps
// only a few dozen lines of the log still shows what failed and why.
func (p *testProgress) why() {
	if len(p.failed) == 0 {
		return
	}
	fmt.Fprintf(p.out, "why (each failure's last lines):\n")
	for _, f := range p.failed {
		var own []string
		for _, l := range p.failOut[f] {
			l = strings.TrimRight(l, "\n")
			if m := testLine.FindString(l); m != "" && !strings.HasPrefix(l[len(m):], "----") ||
				strings.HasPrefix(strings.TrimSpace(l), "panic:") {
				own = append(own, strings.TrimSpace(l))
			}
		}
		if len(own) > whyLines {
			own = own[len(own)-whyLines:]
		}
		fmt.Fprintf(p.out, "  %s:\n", f)
		for _, l := range own {
			if len(l) > whyWidth {
				l = l[:whyWidth] + "…"
			}
			fmt.Fprintf(p.out, "    %s\n", l)
		}
	}
}
