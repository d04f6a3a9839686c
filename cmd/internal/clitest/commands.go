package clitest

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// shellLangs are the fence languages whose blocks CheckCommands reads; console blocks
// are read at their "$ " prompts only.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// CheckCommands reports every command line of pages that runs one of programs (its
// name, "streamcrawl", to its root command) with a command it does not have, a flag
// the command does not take (its own, inherited or global ones, --help and -h count),
// or arguments its Args check refuses. It reads ```sh, ```bash, ```shell and ```console
// blocks, and the code spans of prose that start with a program's name and a space
// (`streamcrawl status --crawl shop`). A program runs as NAME, ./NAME, any path
// ending in /NAME, or go run ./cmd/NAME. Optional arguments in brackets
// ([--until-done]) are read without them.
func CheckCommands(pages []*Page, programs map[string]*cobra.Command) []Problem {
	var probs []Problem
	check := func(p *Page, first int, script string) {
		for _, c := range ShellCommands(script) {
			name, args := program(c.Words, programs)
			if name == "" {
				continue
			}
			if msg := CheckArgs(programs[name], unbracket(args)); msg != "" {
				probs = append(probs, Problem{p.Path, first + c.Line - 1, msg})
			}
		}
	}
	for _, p := range pages {
		for _, b := range p.Blocks {
			if !shellLangs[b.Lang()] {
				continue
			}
			lines := b.Lines
			if b.Lang() == "console" {
				lines = promptLines(lines)
			}
			check(p, b.Line, strings.Join(lines, "\n"))
		}
		for i, line := range p.Lines {
			if p.code[i] {
				continue
			}
			for _, s := range CodeSpans(line) {
				for name := range programs {
					if strings.HasPrefix(s.Text, name+" ") {
						check(p, i+1, s.Text)
					}
				}
			}
		}
	}
	return probs
}

// promptLines keeps the lines of a console block that follow a "$ " prompt (and their
// continuations), blanking the output lines so that line numbers stay.
func promptLines(lines []string) []string {
	out := make([]string, len(lines))
	cont := false
	for i, l := range lines {
		switch {
		case cont:
			out[i] = l
		case strings.HasPrefix(l, "$ "):
			out[i] = l[2:]
		default:
			continue
		}
		cont = strings.HasSuffix(l, `\`)
	}
	return out
}

// unbracket drops the brackets of optional arguments as usage lines write them
// ("[--until-done]", "[--max-file-size 1GB]"), so that the flags inside are checked.
func unbracket(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.HasPrefix(a, "[") && strings.HasSuffix(a, "]") || strings.Count(a, "[") != strings.Count(a, "]") {
			a = strings.TrimRight(strings.TrimLeft(a, "["), "]")
		}
		out[i] = a
	}
	return out
}

// wrappers are commands that run the command after them; their own flags are skipped.
var wrappers = map[string]bool{"sudo": true, "env": true, "time": true, "nohup": true, "exec": true,
	"command": true, "nice": true, "timeout": true, "watch": true, "xargs": true}

var assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// goRunFlags are the flags of go run (go build's) that take a value.
var goRunFlags = map[string]bool{"-C": true, "-p": true, "-tags": true, "-ldflags": true, "-gcflags": true,
	"-asmflags": true, "-mod": true, "-modfile": true, "-exec": true, "-toolexec": true, "-pgo": true, "-overlay": true}

// program returns the program of programs a command runs and its arguments, or "".
func program(words []string, programs map[string]*cobra.Command) (string, []string) {
	i := 0
	for i < len(words) {
		w := words[i]
		switch {
		case assignRE.MatchString(w):
			i++
		case wrappers[w]:
			i++
			for i < len(words) && strings.HasPrefix(words[i], "-") {
				if words[i] == "-n" || words[i] == "-s" || words[i] == "-k" { // watch -n 2, timeout -s KILL
					i++
				}
				i++
			}
			if w == "timeout" && i < len(words) {
				i++ // the duration
			}
		default:
			if w == "go" && i+1 < len(words) && words[i+1] == "run" {
				for i += 2; i < len(words) && strings.HasPrefix(words[i], "-"); i++ {
					if goRunFlags[words[i]] {
						i++
					}
				}
				if i >= len(words) {
					return "", nil
				}
				pkg, _, _ := strings.Cut(strings.TrimSuffix(words[i], "/"), "@")
				for name := range programs {
					if pkg == "cmd/"+name || strings.HasSuffix(pkg, "/cmd/"+name) {
						return name, words[i+1:]
					}
				}
				return "", nil
			}
			if _, ok := programs[path.Base(w)]; ok {
				return path.Base(w), words[i+1:]
			}
			return "", nil
		}
	}
	return "", nil
}

// CheckArgs returns what is wrong with running root with args ("" if nothing): a
// command it does not have, a flag the command does not take, or arguments the
// command's Args refuses.
func CheckArgs(root *cobra.Command, args []string) string {
	c := root
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			name, _, hasValue := strings.Cut(a[2:], "=")
			if name == "help" || (name == "version" && root.Version != "") {
				continue
			}
			f := flags(c).Lookup(name)
			if f == nil {
				return fmt.Sprintf("%s: unknown flag --%s", c.CommandPath(), name)
			}
			if !hasValue && f.NoOptDefVal == "" {
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				if a[j] == 'h' {
					continue
				}
				f := flags(c).ShorthandLookup(a[j : j+1])
				if f == nil {
					return fmt.Sprintf("%s: unknown shorthand flag -%c in %s", c.CommandPath(), a[j], a)
				}
				if f.NoOptDefVal == "" {
					if j == len(a)-1 {
						i++
					}
					break
				}
			}
		default:
			if len(positional) == 0 {
				if sub := subcommand(c, a); sub != nil {
					c = sub
					continue
				}
				if a == "help" && c == root {
					return checkHelp(root, args[i+1:])
				}
				if c.HasSubCommands() && !c.Runnable() {
					return fmt.Sprintf("%s: unknown command %q", c.CommandPath(), a)
				}
			}
			positional = append(positional, a)
		}
	}
	if c.Args != nil {
		if err := c.Args(c, positional); err != nil {
			return fmt.Sprintf("%s %s: %v", c.CommandPath(), strings.Join(positional, " "), err)
		}
	}
	return ""
}

// checkHelp checks "help CMD SUB": the words must name a command.
func checkHelp(root *cobra.Command, args []string) string {
	c := root
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		sub := subcommand(c, a)
		if sub == nil {
			return fmt.Sprintf("%s help: unknown command %q", root.Name(), a)
		}
		c = sub
	}
	return ""
}

// flags returns every flag c takes: its own, its persistent ones and its parents'.
func flags(c *cobra.Command) *pflag.FlagSet {
	c.InheritedFlags() // merges the parents' persistent flags into c.Flags()
	return c.Flags()
}

// subcommand returns c's subcommand called (or aliased) name, or nil.
func subcommand(c *cobra.Command, name string) *cobra.Command {
	for _, s := range c.Commands() {
		if s.Name() == name || s.HasAlias(name) {
			return s
		}
	}
	return nil
}
