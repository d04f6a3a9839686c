package clitest

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
// A page or markers that do not exist fail t with how to add them.
func CheckGenerated(t testing.TB, path string, want map[string]string, update bool, hint string) {
	t.Helper()
	name := strings.TrimLeft(filepath.ToSlash(path), "./")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: create %s with, for each table, a line <!-- generated:NAME --> and a line <!-- end:NAME --> where it goes (tables: %s), then run %s",
			err, name, strings.Join(slices.Sorted(maps.Keys(want)), ", "), hint)
	}
	page := string(b)
	for _, table := range slices.Sorted(maps.Keys(want)) {
		begin, end := "<!-- generated:"+table+" -->\n", "<!-- end:"+table+" -->"
		i, j := strings.Index(page, begin), strings.Index(page, end)
		if i < 0 || j < i {
			t.Fatalf("%s lacks the %q ... %q markers: add those two lines where the table %s goes, then run %s", name, begin, end, table, hint)
		}
		got := page[i+len(begin) : j]
		if got == want[table] {
			continue
		}
		if update {
			page = page[:i+len(begin)] + want[table] + page[j:]
			continue
		}
		t.Errorf("%s table %s differs from the code; run %s\nwant:\n%s\ngot:\n%s", name, table, hint, want[table], got)
	}
	if update {
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
