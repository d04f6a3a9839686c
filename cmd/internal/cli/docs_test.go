package cli

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamcrawl/streamcrawl/cmd/internal/clitest"
	"github.com/streamcrawl/streamcrawl/processors"
)

// updateDocs rewrites the generated tables of docs/ from the code (the settings,
// the commands and their flags, handlers.Options):
//
//	go test ./cmd/internal/cli -run 'TestDocsSettingsTable|TestCommandsDoc|TestDocsOptions' -update-docs
var updateDocs = flag.Bool("update-docs", false, "rewrite the generated tables of docs/ from the code")

const (
	repoRoot = "../../.."
	// settingsPage holds the table of every key of spiders.Settings.
	settingsPage = repoRoot + "/docs/spiders-yaml.md"
)

// docsPages reads README.md and docs/**/*.md.
func docsPages(t *testing.T) []*clitest.Page {
	t.Helper()
	pages, err := clitest.LoadPages(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// reportProblems fails t with each problem, at its file and line.
func reportProblems(t *testing.T, probs []clitest.Problem) {
	t.Helper()
	for _, p := range probs {
		t.Error(p)
	}
	if len(probs) > 0 {
		t.Logf("%d problems", len(probs))
	}
}

// TestDocsLinks checks that every relative link and image of README.md and docs/
// names a file of the repository, and every #anchor a heading of its page.
func TestDocsLinks(t *testing.T) {
	reportProblems(t, clitest.CheckLinks(repoRoot, docsPages(t)))
}

// TestDocsYAML checks that every yaml block of README.md and docs/ (but those marked
// not-a-spider) is a spider, or a part of one, that the spider loader takes.
func TestDocsYAML(t *testing.T) {
	reportProblems(t, clitest.CheckYAMLBlocks(docsPages(t)))
}

// TestDocsCommands checks that every streamcrawl command line of README.md and docs/
// names a command that exists with flags it takes.
func TestDocsCommands(t *testing.T) {
	root := (&App{}).rootCommand()
	reportProblems(t, clitest.CheckCommands(docsPages(t), map[string]*cobra.Command{"streamcrawl": root}))
}

// TestDocsSettingsTable checks that docs/spiders-yaml.md's table of settings is what
// spiders.Settings says (keys, types, defaults, doc comments), so it cannot drift.
func TestDocsSettingsTable(t *testing.T) {
	table, err := clitest.SettingsTable(repoRoot + "/spiders")
	if err != nil {
		t.Fatal(err)
	}
	clitest.CheckGenerated(t, settingsPage, map[string]string{"settings": table},
		*updateDocs, "go test ./cmd/internal/cli -run TestDocsSettingsTable -update-docs")
}

// TestDocsOptions checks that docs/spiders-go.md's table of handlers.Options (the one
// configuration of a run) is what the source says: every exported field, its type and
// its doc comment.
func TestDocsOptions(t *testing.T) {
	table, err := clitest.StructTable(repoRoot+"/handlers", "Options")
	if err != nil {
		t.Fatal(err)
	}
	clitest.CheckGenerated(t, repoRoot+"/docs/spiders-go.md", map[string]string{"options": table},
		*updateDocs, "go test ./cmd/internal/cli -run TestDocsOptions -update-docs")
}

// TestDocsPostgresTable checks that docs/sinks.md's table of the PostgreSQL sink's
// columns is processors.PostgresColumns: each column's name, type and comment.
func TestDocsPostgresTable(t *testing.T) {
	var b strings.Builder
	b.WriteString("| column | type | what it holds |\n|---|---|---|\n")
	for _, c := range processors.PostgresColumns {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s |\n", c.Name, c.Type, clitest.Cell(c.Comment))
	}
	clitest.CheckGenerated(t, repoRoot+"/docs/sinks.md", map[string]string{"postgres-table": b.String()},
		*updateDocs, "go test ./cmd/internal/cli -run TestDocsPostgresTable -update-docs")
}

// TestDocsBuildBeforeUse checks that the pages a new user reads first (README.md,
// docs/getting-started.md) run a streamcrawl binary (streamcrawl, ./streamcrawl) only
// after a command that makes one (go build -o ...streamcrawl, go install); go run
// needs none.
func TestDocsBuildBeforeUse(t *testing.T) {
	for _, p := range docsPages(t) {
		if p.Path != "README.md" && p.Path != "docs/getting-started.md" {
			continue
		}
		built := false
		for _, b := range p.Blocks {
			if b.Lang() != "sh" && b.Lang() != "bash" && b.Lang() != "shell" {
				continue
			}
			for _, c := range clitest.ShellCommands(strings.Join(b.Lines, "\n")) {
				w := c.Words
				switch {
				case len(w) >= 2 && w[0] == "go" && (w[1] == "install" || w[1] == "build" && slices.ContainsFunc(w, func(x string) bool {
					return x == "streamcrawl" || strings.HasSuffix(x, "/streamcrawl")
				})):
					built = true
				case len(w) > 0 && (w[0] == "streamcrawl" || strings.HasSuffix(w[0], "/streamcrawl")) && !built:
					t.Errorf("%s:%d: %s runs before any command of the page builds or installs it (go build -o streamcrawl ./cmd/streamcrawl, or go run ./cmd/streamcrawl)",
						p.Path, b.Line+c.Line-1, strings.Join(w, " "))
				}
			}
		}
	}
}

// TestDocsDocumentedOnce checks that each generated table stands once across README.md
// and docs/, and that no hand-written table row repeats a settings key or a run flag
// that a generated table lists.
func TestDocsDocumentedOnce(t *testing.T) {
	pages := docsPages(t)
	tables := []string{"commands", "run-flags", "other-flags", "bench-commands", "bench-flags", "settings", "options", "postgres-table"}
	keys := map[string]string{}
	for _, f := range runFlags((&App{}).rootCommand()) {
		keys["--"+f] = "run-flags"
	}
	settings, err := clitest.SettingsKeys(repoRoot + "/spiders")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range settings {
		keys[k.Key] = "settings"
	}
	reportProblems(t, clitest.CheckMarkers(pages, tables))
	reportProblems(t, clitest.CheckDuplicateRows(pages, keys))
}

// runFlags are the names of the flags runFlagsTable lists.
func runFlags(root *cobra.Command) []string {
	seen := map[string]bool{}
	visitRunFlags(root, func(_ string, f *pflag.Flag) { seen[f.Name] = true })
	return slices.Sorted(maps.Keys(seen))
}
