package clitest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Page is one Markdown page of the repository, split into what the checks read: its
// lines, its fenced code blocks, and the anchors its headings and <a id> tags make.
type Page struct {
	// Path is the page's path from the repository root, slash-separated ("docs/ops.md").
	Path string
	// Lines are the page's lines, without their line ends.
	Lines []string
	// Blocks are the fenced code blocks, in order.
	Blocks []Block
	// Anchors are the fragment names a link may point at: heading slugs (GitHub's
	// rules) and the ids and names of <a> tags.
	Anchors map[string]bool

	code []bool // per line: part of a fenced block, fences included
}

// Block is a fenced code block of a page.
type Block struct {
	// Info is the fence's info string ("yaml not-a-spider"), trimmed.
	Info string
	// Line is the 1-based line of the block's first content line.
	Line int
	// Lines are the content lines, the fence's indentation removed.
	Lines []string
}

// Lang is the first word of the block's info string, lower-cased ("yaml").
func (b Block) Lang() string {
	f := strings.Fields(b.Info)
	if len(f) == 0 {
		return ""
	}
	return strings.ToLower(f[0])
}

// HasWord reports whether the info string holds w after its first word.
func (b Block) HasWord(w string) bool {
	f := strings.Fields(b.Info)
	for i := 1; i < len(f); i++ {
		if f[i] == w {
			return true
		}
	}
	return false
}

// InCode reports whether the 1-based line n is part of a fenced code block.
func (p *Page) InCode(n int) bool { return n >= 1 && n <= len(p.code) && p.code[n-1] }

// Problem is one thing wrong in a page, where it stands.
type Problem struct {
	// File is the page's path from the repository root.
	File string
	// Line is 1-based.
	Line int
	// Msg says what is wrong.
	Msg string
}

// String reads "FILE:LINE: message".
func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// LoadPages reads the Markdown pages of the repository at root: README.md and every
// .md file under docs/, in path order.
func LoadPages(root string) ([]*Page, error) {
	paths := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && path == filepath.Join(root, "docs") {
				return filepath.SkipDir
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("clitest: walk docs: %w", err)
	}
	sort.Strings(paths[1:])
	pages := make([]*Page, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return nil, fmt.Errorf("clitest: %w", err)
		}
		pages = append(pages, ParsePage(p, string(b)))
	}
	return pages, nil
}

var (
	fenceRE   = regexp.MustCompile("^( *)(`{3,}|~{3,})(.*)$")
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	anchorRE  = regexp.MustCompile(`(?i)<a\s[^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']`)
)

// ParsePage splits the Markdown text of the page at path (from the repository root).
func ParsePage(path, text string) *Page {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	p := &Page{Path: path, Lines: strings.Split(strings.TrimSuffix(text, "\n"), "\n"), Anchors: map[string]bool{}}
	p.code = make([]bool, len(p.Lines))
	slugs := map[string]int{}
	for i := 0; i < len(p.Lines); i++ {
		line := p.Lines[i]
		if m := fenceRE.FindStringSubmatch(line); m != nil && !(m[2][0] == '`' && strings.Contains(m[3], "`")) {
			indent, fence := len(m[1]), m[2]
			b := Block{Info: strings.TrimSpace(m[3]), Line: i + 2}
			p.code[i] = true
			for i++; i < len(p.Lines); i++ {
				p.code[i] = true
				t := strings.TrimLeft(p.Lines[i], " ")
				if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]+" \t") == "" {
					break
				}
				b.Lines = append(b.Lines, dedent(p.Lines[i], indent))
			}
			p.Blocks = append(p.Blocks, b)
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			s := Slug(m[2])
			if n, ok := slugs[s]; ok {
				slugs[s] = n + 1
				s = fmt.Sprintf("%s-%d", s, n+1)
			} else {
				slugs[s] = 0
			}
			p.Anchors[s] = true
		}
		for _, m := range anchorRE.FindAllStringSubmatch(maskCode(line), -1) {
			p.Anchors[m[1]] = true
		}
	}
	return p
}

// dedent removes up to n leading spaces.
func dedent(s string, n int) string {
	for n > 0 && strings.HasPrefix(s, " ") {
		s, n = s[1:], n-1
	}
	return s
}

// Span is a code span of a line: [Start, End) holds the backticks too.
type Span struct {
	Start, End int
	// Text is the span's content, one leading and trailing space stripped as Markdown does.
	Text string
}

// CodeSpans returns the inline code spans of a line of prose.
func CodeSpans(line string) []Span {
	var spans []Span
	for i := 0; i < len(line); {
		if line[i] != '`' {
			i++
			continue
		}
		n := run(line, i, '`')
		// find a closing run of exactly n backticks
		j := i + n
		for j < len(line) {
			if line[j] != '`' {
				j++
				continue
			}
			m := run(line, j, '`')
			if m == n {
				break
			}
			j += m
		}
		if j >= len(line) {
			i += n // no closing run: the backticks are literal
			continue
		}
		text := line[i+n : j]
		if len(text) >= 2 && text[0] == ' ' && text[len(text)-1] == ' ' && strings.Trim(text, " ") != "" {
			text = text[1 : len(text)-1]
		}
		spans = append(spans, Span{Start: i, End: j + n, Text: text})
		i = j + n
	}
	return spans
}

func run(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// maskCode replaces the code spans of line with spaces, keeping the offsets of the rest.
func maskCode(line string) string {
	spans := CodeSpans(line)
	if len(spans) == 0 {
		return line
	}
	b := []byte(line)
	for _, s := range spans {
		for k := s.Start; k < s.End; k++ {
			b[k] = ' '
		}
	}
	return string(b)
}

var (
	slugLinkRE = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	slugTagRE  = regexp.MustCompile(`<[^>]+>`)
)

// Slug is the anchor GitHub makes of a heading's text: the text as rendered (links
// by their text, code spans by their content, tags and emphasis marks dropped),
// lower-cased, spaces to '-', every other character but letters, digits, '-' and '_'
// dropped. Duplicates are numbered by ParsePage.
func Slug(heading string) string {
	var text strings.Builder
	last := 0
	for _, s := range CodeSpans(heading) {
		text.WriteString(renderInline(heading[last:s.Start]))
		text.WriteString(s.Text)
		last = s.End
	}
	text.WriteString(renderInline(heading[last:]))
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text.String())) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// renderInline drops the Markdown of prose: links become their text, tags go, and
// the emphasis marks '*' and word-edge '_' go.
func renderInline(s string) string {
	s = slugLinkRE.ReplaceAllString(s, "$1")
	s = slugTagRE.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "*", "")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '_' && (i == 0 || i == len(s)-1 || !isWord(s[i-1]) || !isWord(s[i+1])) {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
