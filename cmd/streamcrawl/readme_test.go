package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// updateReadme rewrites the generated tables of README.md:
//
//	go test ./cmd/streamcrawl -run TestREADMETables -update-readme
var updateReadme = flag.Bool("update-readme", false, "rewrite README.md's generated tables from the commands")

const readmePath = "../../README.md"

// runCommands are the commands that run stages; their flags make one table.
var runCommands = []string{"crawl", "demo", "fetch", "parse", "store", "process"}

// TestREADMETables checks that README.md's tables of commands and of flags are what the
// commands say (their Use, Short, flags, defaults and usage), so they cannot drift.
func TestREADMETables(t *testing.T) {
	root := (&app{}).rootCommand()
	want := map[string]string{"commands": commandsTable(root), "run-flags": runFlagsTable(root)}
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for name, table := range want {
		begin, end := "<!-- generated:"+name+" -->\n", "<!-- end:"+name+" -->"
		i, j := strings.Index(readme, begin), strings.Index(readme, end)
		if i < 0 || j < i {
			t.Fatalf("README.md lacks the %q ... %q markers", begin, end)
		}
		got := readme[i+len(begin) : j]
		if got == table {
			continue
		}
		if *updateReadme {
			readme = readme[:i+len(begin)] + table + readme[j:]
			continue
		}
		t.Errorf("README.md table %s differs from the commands; run go test ./cmd/streamcrawl -run TestREADMETables -update-readme\nwant:\n%s\ngot:\n%s", name, table, got)
	}
	if *updateReadme {
		if err := os.WriteFile(readmePath, []byte(readme), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cell escapes a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// commandsTable lists every command with its usage line and summary.
func commandsTable(root *cobra.Command) string {
	var b strings.Builder
	b.WriteString("| command | what it does |\n|---|---|\n")
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", cell(c.Use), cell(c.Short))
	}
	return b.String()
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
	for _, name := range runCommands {
		c, _, err := root.Find([]string{name})
		if err != nil || c.Name() != name {
			panic("no command " + name)
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
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
	}
	names := make([]string, 0, len(rows))
	for n := range rows {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| flag | default | commands | meaning |\n|---|---|---|---|\n")
	for _, n := range names {
		r := rows[n]
		kind, usage := pflag.UnquoteUsage(r.f)
		flagText := "--" + n
		if kind != "" {
			flagText += " " + kind
		}
		def := r.f.DefValue
		if def == "[]" || (def == "false" && kind == "") {
			def = ""
		}
		if def != "" {
			def = "`" + cell(def) + "`"
		}
		for _, c := range r.cmds {
			if d, ok := r.defs[c]; ok {
				def += fmt.Sprintf(" (%s: `%s`)", c, cell(d))
			}
		}
		cmds := strings.Join(r.cmds, ", ")
		if len(r.cmds) == len(runCommands) {
			cmds = "all"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", cell(flagText), def, cmds, cell(usage))
	}
	return b.String()
}
