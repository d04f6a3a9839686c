package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
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

	output  map[string][]string // package + "\x00" + test -> output lines, until it ends
	tests   []testTime          // every ended top-level test
	pkgs    []testTime          // every ended package
	failed  []string            // "pkg TestName" or "pkg" for each failure
	skipped int
}

// testTime is how long one test or package took.
type testTime struct {
	name    string
	elapsed float64
}

func (a *app) testProgressCommand() *cobra.Command {
	var slowest int
	cmd := &cobra.Command{
		Use:   "testprogress [--slowest N] < go-test-json",
		Short: "Print a line per ended test and package from `go test -json` on stdin",
		Long: `testprogress reads the output of go test -json on stdin and prints a line as each
top-level test and each package ends, with its own time and the time since the run began,
so a long test run shows it is alive. The output of a failed test or package is printed in
full when it ends. At the end it prints the slowest packages and tests and exits non-zero
when anything failed (or the stream held no package result).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := &testProgress{out: cmd.OutOrStdout(), start: time.Now(), slowest: slowest,
				output: map[string][]string{}}
			return p.run(cmd.InOrStdin())
		},
	}
	cmd.Flags().IntVar(&slowest, "slowest", 10, "print the N slowest packages and tests at the end")
	return cmd
}

// run reads events until stdin ends, then prints the summary.
func (p *testProgress) run(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev testEvent
		line := sc.Bytes()
		if err := json.Unmarshal(line, &ev); err != nil || ev.Action == "" {
			fmt.Fprintf(p.out, "%s\n", line) // not an event (a build error on stderr merged in)
			continue
		}
		p.event(ev)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("testprogress: read: %w", err)
	}
	return p.summary()
}

// event handles one test2json event.
func (p *testProgress) event(ev testEvent) {
	if ev.Action == "build-output" {
		fmt.Fprint(p.out, ev.Output) // a compile error: shown as it comes
		return
	}
	top, _, sub := strings.Cut(ev.Test, "/")
	key := ev.Package + "\x00" + top // a subtest's output belongs to its top-level test
	switch ev.Action {
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
		}
		verb := map[string]string{"pass": "ok  ", "fail": "FAIL", "skip": "SKIP"}[ev.Action]
		fmt.Fprintf(p.out, "[%s] %s %s%s %.2fs\n", p.since(), verb, kind, name, ev.Elapsed)
		switch ev.Action {
		case "fail":
			p.failed = append(p.failed, name)
			for _, l := range p.output[key] {
				fmt.Fprintf(p.out, "    %s", l)
			}
		case "skip":
			if ev.Test != "" {
				p.skipped++
			}
		}
		delete(p.output, key)
	}
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
	fmt.Fprintf(p.out, "[%s] %d packages, %d tests, %d skipped, %d failed\n",
		p.since(), len(p.pkgs), len(p.tests), p.skipped, len(p.failed))
	if len(p.failed) > 0 {
		return fmt.Errorf("testprogress: failed: %s", strings.Join(p.failed, ", "))
	}
	if len(p.pkgs) == 0 {
		return fmt.Errorf("testprogress: no package result on stdin (did go test start?)")
	}
	return nil
}
