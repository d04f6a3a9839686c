package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/cmd/internal/cli"
)

// runWithStdin runs streamcrawl-bench args with stdin and returns the exit code.
func runWithStdin(t *testing.T, stdin io.Reader, stdout, stderr io.Writer, args ...string) int {
	t.Helper()
	a := &app{cli.New(stdout, stderr)}
	a.Stdin = stdin
	return a.Execute(context.Background(), a.rootCommand(), args)
}

// testprogressStream is a go test -json stream of two packages: one passes (a test
// with a subtest, a skipped test), one fails a test whose output must be shown.
const testprogressStream = `{"Action":"start","Package":"ex/a"}
{"Action":"run","Package":"ex/a","Test":"TestOne"}
{"Action":"run","Package":"ex/a","Test":"TestOne/sub"}
{"Action":"output","Package":"ex/a","Test":"TestOne/sub","Output":"quiet when it passes\n"}
{"Action":"pass","Package":"ex/a","Test":"TestOne/sub","Elapsed":1.5}
{"Action":"pass","Package":"ex/a","Test":"TestOne","Elapsed":2.25}
{"Action":"skip","Package":"ex/a","Test":"TestSkipped","Elapsed":0}
{"Action":"pass","Package":"ex/a","Elapsed":3}
{"Action":"start","Package":"ex/b"}
{"Action":"run","Package":"ex/b","Test":"TestBad"}
{"Action":"output","Package":"ex/b","Test":"TestBad","Output":"bad_test.go:9: got 1, want 2\n"}
{"Action":"output","Package":"ex/b","Test":"TestBad","Output":"    harness_test.go:185: ---- a process's output\n"}
{"Action":"fail","Package":"ex/b","Test":"TestBad","Elapsed":7}
{"Action":"run","Package":"ex/b","Test":"TestPanics"}
{"Action":"output","Package":"ex/b","Test":"TestPanics","Output":"panic: send on closed channel\n"}
{"Action":"fail","Package":"ex/b","Elapsed":8}
not json: a line go test wrote on stderr
`

func TestTestProgressPrintsALinePerEndedTestAndPackage(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runWithStdin(t, strings.NewReader(testprogressStream), &out, &errOut, "testprogress", "--slowest", "2")
	got := out.String()
	for _, want := range []string{
		"ok   ex/a TestOne 2.25s\n",
		"SKIP ex/a TestSkipped 0.00s\n",
		"ok   package ex/a 3.00s\n",
		"FAIL ex/b TestBad 7.00s\n    bad_test.go:9: got 1, want 2\n",
		"FAIL package ex/b 8.00s\n",
		"not json: a line go test wrote on stderr\n",
		"slowest packages:\n       8.0s ex/b\n       3.0s ex/a\n",
		"slowest tests:\n       7.0s ex/b TestBad\n       2.2s ex/a TestOne\n",
		"--- ex/b TestBad failed:\n    bad_test.go:9: got 1, want 2\n",
		"--- ex/b failed:\n    panic: send on closed channel\n",
		"why (each failure's last lines):\n  ex/b TestBad:\n    bad_test.go:9: got 1, want 2\n  ex/b:\n    panic: send on closed channel\n" +
			"[", // the short block comes last, before the count line, without the harness's dump
		"2 packages (1 failed), 3 tests (1 failed, 1 skipped)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q; got:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestOne/sub") || strings.Contains(got, "quiet when it passes") {
		t.Errorf("a passing subtest's line or output is shown:\n%s", got)
	}
	if code == 0 || !strings.Contains(errOut.String(), "failed: ex/b TestBad, ex/b") {
		t.Errorf("exit %d, stderr %q; want non-zero naming the failures", code, errOut.String())
	}
}

func TestTestProgressFailsOnAStreamWithoutPackages(t *testing.T) {
	var out, errOut bytes.Buffer
	code := runWithStdin(t, strings.NewReader("# ex/c\nbuild failed\n"), &out, &errOut, "testprogress")
	if code == 0 || !strings.Contains(errOut.String(), "no package result") {
		t.Errorf("exit %d, stderr %q; want non-zero saying no package ended", code, errOut.String())
	}
}
