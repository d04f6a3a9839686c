package clitest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// FlagTables documents the flags of root's commands, one "### name" heading and table a
// command (its subcommands as "### name sub"), in the order of CommandsTable, leaving out
// the commands in skip (documented in a table of their own) and hidden ones. The global
// flags (root's persistent flags) come first, under "### Global flags".
func FlagTables(root *cobra.Command, skip ...string) string {
	var b strings.Builder
	b.WriteString("### Global flags\n\n")
	b.WriteString(flagTable(root.PersistentFlags()))
	var walk func(prefix string, cmds []*cobra.Command)
	walk = func(prefix string, cmds []*cobra.Command) {
		for _, c := range cmds {
			if c.Hidden || c.Name() == "help" || c.Name() == "completion" || slices.Contains(skip, c.Name()) {
				continue
			}
			name := strings.TrimSpace(prefix + " " + c.Name())
			if c.Runnable() {
				fmt.Fprintf(&b, "\n### %s\n\n", name)
				if c.LocalNonPersistentFlags().HasAvailableFlags() {
					b.WriteString(flagTable(c.LocalNonPersistentFlags()))
				} else {
					b.WriteString("No flags of its own.\n")
				}
			}
			walk(name, c.Commands())
		}
	}
	walk("", root.Commands())
	return b.String()
}

// flagTable is one Markdown table of fs: flag (with its value's kind), default, meaning.
func flagTable(fs *pflag.FlagSet) string {
	var b strings.Builder
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		kind, usage := pflag.UnquoteUsage(f)
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", " + name
		}
		if kind != "" {
			name += " " + kind
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", Cell(name), DefaultCell(f, kind), Cell(usage))
	})
	return b.String()
}

// DefaultCell is a flag's default as a table cell: empty for a flag that is off, an empty
// list or an empty string, else the value in backticks.
func DefaultCell(f *pflag.Flag, kind string) string {
	def := f.DefValue
	if def == "[]" || def == "" || (def == "false" && kind == "") {
		return ""
	}
	return "`" + Cell(def) + "`"
}
