package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/streamcrawl/streamcrawl/cmd/internal/clitest"
)

// commandsDoc is the page that documents every command and flag, in generated tables.
const commandsDoc = repoRoot + "/docs/commands.md"

// runCommands are the commands that run stages; their flags make one table.
var runCommands = []string{"crawl", "demo", "fetch", "parse", "store", "process"}

// TestCommandsDoc checks that docs/commands.md's tables of commands and of flags are what
// the commands say (their Use, Short, flags, defaults and usage), so they cannot drift:
// the commands, the flags of the commands that run stages in one table, and every other
// command's flags (and the global ones) in a table each.
func TestCommandsDoc(t *testing.T) {
	root := (&App{}).rootCommand()
	clitest.CheckGenerated(t, commandsDoc, map[string]string{
		"commands":    clitest.CommandsTable(root),
		"run-flags":   runFlagsTable(root),
		"other-flags": clitest.FlagTables(root, runCommands...),
	}, *updateDocs, "go test ./cmd/internal/cli -run TestCommandsDoc -update-docs")
}

// runFlagsTable lists the flags of the commands that run stages, with their defaults
// and which of those commands have them.
func runFlagsTable(root *cobra.Command) string {
	type row struct {
		f    *pflag.Flag
		cmds []string
		defs map[string]string // command -> default, where it differs from f's
	}
	rows := map[string]*row{}
	visitRunFlags(root, func(name string, f *pflag.Flag) {
		r := rows[f.Name]
		if r == nil {
			r = &row{f: f, defs: map[string]string{}}
			rows[f.Name] = r
		}
		r.cmds = append(r.cmds, name)
		if f.DefValue != r.f.DefValue {
			r.defs[name] = f.DefValue
		}
	})
	names := slices.Sorted(maps.Keys(rows))
	var b strings.Builder
	b.WriteString("| flag | default | commands | meaning |\n|---|---|---|---|\n")
	for _, n := range names {
		r := rows[n]
		kind, usage := pflag.UnquoteUsage(r.f)
		flagText := "--" + n
		if kind != "" {
			flagText += " " + kind
		}
		def := clitest.DefaultCell(r.f, kind)
		for _, c := range r.cmds {
			if d, ok := r.defs[c]; ok {
				def += fmt.Sprintf(" (%s: `%s`)", c, clitest.Cell(d))
			}
		}
		cmds := strings.Join(r.cmds, ", ")
		if len(r.cmds) == len(runCommands) {
			cmds = "all"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", clitest.Cell(flagText), def, cmds, clitest.Cell(usage))
	}
	return b.String()
}

// visitRunFlags calls fn with every flag of each command that runs stages, command by
// command in the order of runCommands.
func visitRunFlags(root *cobra.Command, fn func(cmd string, f *pflag.Flag)) {
	for _, name := range runCommands {
		c, _, err := root.Find([]string{name})
		if err != nil || c.Name() != name {
			panic("no command " + name)
		}
		c.Flags().VisitAll(func(f *pflag.Flag) { fn(name, f) })
	}
}
