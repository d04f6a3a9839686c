package clitest

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

var markerRE = regexp.MustCompile(`<!-- (generated|end):([A-Za-z0-9_.-]+) -->`)

// CheckMarkers reports the generated tables that do not stand exactly once across
// pages: each name of names needs its "<!-- generated:NAME -->" once, in prose, and its
// "<!-- end:NAME -->" after it in the same page; a marker of a name that no test
// generates is reported too.
func CheckMarkers(pages []*Page, names []string) []Problem {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	type at struct {
		page *Page
		line int
	}
	begins, ends := map[string][]at{}, map[string][]at{}
	var probs []Problem
	for _, p := range pages {
		for i, line := range p.Lines {
			if p.code[i] {
				continue
			}
			for _, m := range markerRE.FindAllStringSubmatch(maskCode(line), -1) {
				if !want[m[2]] {
					probs = append(probs, Problem{p.Path, i + 1, fmt.Sprintf("marker %s of a table no test generates (generated: %s)", m[0], strings.Join(names, ", "))})
					continue
				}
				if m[1] == "generated" {
					begins[m[2]] = append(begins[m[2]], at{p, i + 1})
				} else {
					ends[m[2]] = append(ends[m[2]], at{p, i + 1})
				}
			}
		}
	}
	for _, n := range names {
		b, e := begins[n], ends[n]
		switch {
		case len(b) == 0:
			probs = append(probs, Problem{"README.md", 1, fmt.Sprintf("no page has the generated table %s: add the lines <!-- generated:%[1]s --> and <!-- end:%[1]s --> to the page that documents it, then run its test with the update flag", n)})
		case len(b) > 1:
			for _, a := range b[1:] {
				probs = append(probs, Problem{a.page.Path, a.line, fmt.Sprintf("generated table %s stands again (first at %s:%d): document it once and link to it", n, b[0].page.Path, b[0].line)})
			}
		case len(e) != 1 || e[0].page != b[0].page || e[0].line < b[0].line:
			probs = append(probs, Problem{b[0].page.Path, b[0].line, fmt.Sprintf("generated table %s lacks its one <!-- end:%[1]s --> after it on the same page", n)})
		}
	}
	return probs
}

// generatedLines marks the lines of p between generated-table markers, markers included.
func generatedLines(p *Page) []bool {
	in := make([]bool, len(p.Lines))
	open := ""
	for i, line := range p.Lines {
		if !p.code[i] {
			for _, m := range markerRE.FindAllStringSubmatch(line, -1) {
				if m[1] == "generated" {
					open = m[2]
				} else if m[2] == open {
					open = ""
					in[i] = true
				}
			}
		}
		if open != "" {
			in[i] = true
		}
	}
	return in
}

// CheckDuplicateRows reports the hand-written table rows of pages (outside generated
// tables) whose first cell names, in backticks, a key that a generated table lists:
// keys maps each such key ("concurrency", "budget.pages_per_host", "--crawl") to its
// table's name. A first cell counts when it starts with code spans that are keys
// alone ("`concurrency`", "`settings.concurrency`", "`--crawl NAME`"): a cell that
// starts with prose, or a setting with a value ("`capacity: 1000000`", a measured
// variant), is no reference; nor is a header row. A table whose keys are mostly the
// leaves of one nested key ("drop_params", "headers" of fingerprint) is read under
// it; a table of which fewer than half of the keys are known is about something
// else (login's url and headers) and is left alone.
func CheckDuplicateRows(pages []*Page, keys map[string]string) []Problem {
	leaves := map[string]map[string]bool{} // parent ("fingerprint.") -> its leaves
	for k := range keys {
		if i := strings.LastIndex(k, "."); i > 0 && !strings.HasPrefix(k, "-") {
			if leaves[k[:i+1]] == nil {
				leaves[k[:i+1]] = map[string]bool{}
			}
			leaves[k[:i+1]][k[i+1:]] = true
		}
	}
	var probs []Problem
	for _, p := range pages {
		gen := generatedLines(p)
		for _, tbl := range tables(p, gen) {
			probs = append(probs, duplicateRows(p, tbl, keys, leaves)...)
		}
	}
	return probs
}

// row is a table row's line and the keys its first cell starts with.
type row struct {
	line int
	keys []string
}

// tables returns the body rows of each hand-written table of p.
func tables(p *Page, gen []bool) [][]row {
	var all [][]row
	var cur []row
	for i, line := range p.Lines {
		cell, ok := firstCell(line)
		if p.code[i] || gen[i] || !ok {
			if strings.HasPrefix(strings.TrimSpace(line), "|") && !p.code[i] && !gen[i] {
				continue // a delimiter row
			}
			if cur != nil {
				all = append(all, cur)
			}
			cur = nil
			continue
		}
		if i+1 < len(p.Lines) && isDelimiterRow(p.Lines[i+1]) {
			continue // a header row
		}
		var ks []string
		for _, s := range leadingSpans(cell) {
			if k := cellKey(s.Text); k != "" {
				ks = append(ks, k)
			}
		}
		cur = append(cur, row{i + 1, ks})
	}
	if cur != nil {
		all = append(all, cur)
	}
	return all
}

func isDelimiterRow(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, "|") && strings.Contains(t, "-") && strings.Trim(t, "|-: \t") == ""
}

// duplicateRows reports the rows of one table that repeat a key of keys.
func duplicateRows(p *Page, tbl []row, keys map[string]string, leaves map[string]map[string]bool) []Problem {
	parent, best := "", 0
	for par, ls := range leaves {
		n := 0
		for _, r := range tbl {
			for _, k := range r.keys {
				if ls[k] {
					n++
				}
			}
		}
		if n >= 2 && (n > best || n == best && par < parent) {
			parent, best = par, n
		}
	}
	resolve := func(k string) string {
		if parent != "" && keys[parent+k] != "" {
			return parent + k
		}
		if keys[k] != "" {
			return k
		}
		return ""
	}
	total, known := 0, 0
	for _, r := range tbl {
		for _, k := range r.keys {
			total++
			if resolve(k) != "" {
				known++
			}
		}
	}
	if 2*known < total {
		return nil
	}
	var probs []Problem
	for _, r := range tbl {
		var dup []string
		for _, k := range r.keys {
			if full := resolve(k); full != "" {
				dup = append(dup, fmt.Sprintf("`%s` (table %s)", full, keys[full]))
			}
		}
		if len(dup) > 0 {
			sort.Strings(dup)
			probs = append(probs, Problem{p.Path, r.line, "table row repeats what a generated table lists: " + strings.Join(dup, ", ") + "; link to that table instead"})
		}
	}
	return probs
}

// firstCell returns the first cell of a Markdown table row, or false for a line that
// is no row or is a delimiter row (|---|:--:|).
func firstCell(line string) (string, bool) {
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, "|") {
		return "", false
	}
	if strings.Trim(t, "|-: \t") == "" {
		return "", false
	}
	t = t[1:]
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case '\\':
			i++
		case '`':
			// a code span may hold '|' (escaped as \|): skip to its end
			for _, s := range CodeSpans(t[i:]) {
				if s.Start == 0 {
					i += s.End - 1
				}
				break
			}
		case '|':
			return t[:i], true
		}
	}
	return t, true
}

// leadingSpans returns the code spans a cell starts with: the first one, and the
// others too when nothing but separators (",", "/", "or", "and") stands between them;
// none when the cell starts with prose (a row about a test that mentions --crawl).
func leadingSpans(cell string) []Span {
	cell = strings.TrimSpace(cell)
	spans := CodeSpans(cell)
	if len(spans) == 0 || spans[0].Start != 0 {
		return nil
	}
	for i := 1; i < len(spans); i++ {
		between := strings.NewReplacer(",", "", "/", "", " or ", "", " and ", "").Replace(" " + cell[spans[i-1].End:spans[i].Start] + " ")
		if strings.TrimSpace(between) != "" {
			return spans[:i]
		}
	}
	return spans
}

// cellKey reads a key from a code span of a first cell, or "" for a span that is no
// key alone: "settings.concurrency" is "concurrency", "--crawl NAME" is "--crawl",
// "capacity: 1000000" is "".
func cellKey(s string) string {
	f := strings.Fields(s)
	switch {
	case len(f) == 0:
		return ""
	case strings.HasPrefix(f[0], "--") && len(f) <= 2:
		k, _, _ := strings.Cut(f[0], "=")
		return k
	case len(f) == 1 && !strings.ContainsAny(f[0], "=:"):
		return strings.TrimPrefix(f[0], "settings.")
	}
	return ""
}
