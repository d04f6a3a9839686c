package clitest

import (
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Link is a link or image of a page's prose.
type Link struct {
	// Line is 1-based.
	Line int
	// Dest is the destination as written ("../ops.md#redis", "https://x.example/").
	Dest string
}

var (
	refDefRE   = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	htmlLinkRE = regexp.MustCompile(`(?i)<(?:a|img|source)\s[^>]*?\b(?:href|src|srcset)\s*=\s*["']([^"']*)["']`)
	autoLinkRE = regexp.MustCompile(`<((?:https?|mailto):[^>\s]*)>`)
)

// Links returns the links and images of the page's prose: inline ones ([text](dest),
// ![alt](dest)), reference definitions ([ref]: dest), autolinks (<https://...>) and
// the href and src of HTML tags. Code blocks and code spans are left out.
func (p *Page) Links() []Link {
	var links []Link
	for i, raw := range p.Lines {
		if p.code[i] {
			continue
		}
		line := maskCode(raw)
		n := i + 1
		if m := refDefRE.FindStringSubmatch(line); m != nil {
			links = append(links, Link{n, strings.Trim(m[1], "<>")})
			continue
		}
		for k := 0; ; {
			j := strings.Index(line[k:], "](")
			if j < 0 {
				break
			}
			start := k + j + 2
			dest, end := inlineDest(line, start)
			links = append(links, Link{n, dest})
			k = end
		}
		for _, m := range htmlLinkRE.FindAllStringSubmatch(line, -1) {
			links = append(links, Link{n, m[1]})
		}
		for _, m := range autoLinkRE.FindAllStringSubmatch(line, -1) {
			links = append(links, Link{n, m[1]})
		}
	}
	return links
}

// inlineDest reads the destination of an inline link that starts at line[i] (after
// "]("), and returns it with the offset after it.
func inlineDest(line string, i int) (string, int) {
	for i < len(line) && line[i] == ' ' {
		i++
	}
	if i < len(line) && line[i] == '<' {
		j := strings.IndexByte(line[i:], '>')
		if j < 0 {
			return line[i+1:], len(line)
		}
		return line[i+1 : i+j], i + j + 1
	}
	depth, j := 0, i
	for ; j < len(line); j++ {
		c := line[j]
		if c == ' ' || c == '\t' {
			break
		}
		if c == '(' {
			depth++
		}
		if c == ')' {
			if depth == 0 {
				break
			}
			depth--
		}
	}
	return line[i:j], j
}

var lineAnchorRE = regexp.MustCompile(`^L\d+(C\d+)?(-L\d+(C\d+)?)?$`)

// CheckLinks reports the links of pages that do not resolve, with root the repository
// root: a relative link must name a file or directory in the repository (from the
// page's folder; a leading '/' from the root), and its #anchor a heading or <a id>
// of the target page; an http(s) link must parse as a URL with a host (it is not
// fetched). Links out of the repository (../shared/...) and other schemes are errors.
func CheckLinks(root string, pages []*Page) []Problem {
	byPath := map[string]*Page{}
	for _, p := range pages {
		byPath[p.Path] = p
	}
	var probs []Problem
	for _, p := range pages {
		for _, l := range p.Links() {
			if msg := checkLink(root, byPath, p, l.Dest); msg != "" {
				probs = append(probs, Problem{p.Path, l.Line, msg})
			}
		}
	}
	return probs
}

func checkLink(root string, byPath map[string]*Page, p *Page, dest string) string {
	if strings.TrimSpace(dest) == "" {
		return "empty link"
	}
	u, err := url.Parse(dest)
	if err != nil {
		return "link " + dest + " does not parse: " + err.Error()
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return "link " + dest + ": no host"
		}
		return ""
	case "mailto":
		return ""
	case "":
	default:
		return "link " + dest + ": scheme " + u.Scheme + " leads out of the repository"
	}
	if u.Host != "" {
		return "link " + dest + " leads out of the repository"
	}
	target := p
	if u.Path != "" {
		var rel string
		if strings.HasPrefix(u.Path, "/") {
			rel = path.Clean(strings.TrimPrefix(u.Path, "/"))
		} else {
			rel = path.Join(path.Dir(p.Path), u.Path)
		}
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return "link " + dest + " leads out of the repository (" + rel + ")"
		}
		fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return "link " + dest + ": no file " + rel
		}
		if u.Fragment == "" {
			return ""
		}
		if fi.IsDir() {
			return "link " + dest + ": an anchor on the folder " + rel
		}
		if !strings.HasSuffix(rel, ".md") {
			if lineAnchorRE.MatchString(u.Fragment) {
				return ""
			}
			return "link " + dest + ": anchor #" + u.Fragment + " on " + rel + ", which is not Markdown (only #L10 or #L10-L20)"
		}
		target = byPath[rel]
		if target == nil {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil {
				return "link " + dest + ": " + err.Error()
			}
			target = ParsePage(rel, string(b))
			byPath[rel] = target
		}
	}
	if u.Fragment == "" {
		if u.Path == "" {
			return "empty anchor"
		}
		return ""
	}
	if !target.Anchors[u.Fragment] {
		return "link " + dest + ": no heading or <a id> #" + u.Fragment + " in " + target.Path
	}
	return ""
}
