// Package clitest holds what the tests of both commands (streamcrawl, streamcrawl-bench)
// use to keep the generated tables of the docs equal to their command trees.
package clitest

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Cell escapes a Markdown table cell.
func Cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// CommandsTable lists root's commands (hidden ones, help and completion aside) with
// their usage line and summary, as a Markdown table.
func CommandsTable(root *cobra.Command) string {
	var b strings.Builder
	b.WriteString("| command | what it does |\n|---|---|\n")
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", Cell(c.Use), Cell(c.Short))
	}
	return b.String()
}

// CheckGenerated checks that each table of want stands in the page at path between
// its markers, "<!-- generated:NAME -->" and "<!-- end:NAME -->", and fails t where one
// differs, naming the command that rewrites them (hint); with update it rewrites them.
func CheckGenerated(t testing.TB, path string, want map[string]string, update bool, hint string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b) // the page
	for name, table := range want {
		begin, end := "<!-- generated:"+name+" -->\n", "<!-- end:"+name+" -->"
		i, j := strings.Index(readme, begin), strings.Index(readme, end)
		if i < 0 || j < i {
			t.Fatalf("%s lacks the %q ... %q markers", path, begin, end)
		}
		got := readme[i+len(begin) : j]
		if got == table {
			continue
		}
		if update {
			readme = readme[:i+len(begin)] + table + readme[j:]
			continue
		}
		t.Errorf("%s: table %s differs from the code; run %s\nwant:\n%s\ngot:\n%s", path, name, hint, table, got)
	}
	if update {
		if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
