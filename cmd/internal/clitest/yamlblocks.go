package clitest

import (
	"errors"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// NotASpider is the word of a yaml fence's info string that keeps the block out of
// CheckYAMLBlocks: "```yaml not-a-spider" (Docker Compose, Kubernetes, Prometheus).
const NotASpider = "not-a-spider"

// fragmentSpider is what a fragment block is completed with: a spider's required keys.
const fragmentSpider = "name: docs\nstart_urls: [http://127.0.0.1:8080/]\n"

// CheckYAMLBlocks loads every ```yaml (or ```yml) block of pages with the spider loader
// (spiders.Parse) and reports the ones it refuses, at the line of the loader's message.
// A block with a top-level name key is a whole spider; any other block is a fragment
// (settings:, login:, follow:, ...) completed with a name and start URLs first. A
// block whose info string holds NotASpider is skipped.
func CheckYAMLBlocks(pages []*Page) []Problem {
	var probs []Problem
	for _, p := range pages {
		for _, b := range p.Blocks {
			if l := b.Lang(); (l != "yaml" && l != "yml") || b.HasWord(NotASpider) {
				continue
			}
			if line, msg := loadYAMLBlock(p.Path, b); msg != "" {
				probs = append(probs, Problem{p.Path, line, msg})
			}
		}
	}
	return probs
}

// loadYAMLBlock loads one block and returns the page line and message of its error, or "".
func loadYAMLBlock(file string, b Block) (int, string) {
	text := strings.Join(b.Lines, "\n") + "\n"
	switch {
	case isWholeSpider(text):
	case hasTopKey(text, "start_urls") || hasTopKey(text, "sitemap_urls"):
		text += "name: docs\n"
	default:
		// After the fragment's own lines, so that the loader's line numbers are the block's.
		text += fragmentSpider
	}
	_, _, err := spiders.Parse(file, []byte(text))
	if err == nil {
		return 0, ""
	}
	line := b.Line
	var se *spiders.SpecError
	if errors.As(err, &se) {
		if se.Line > 0 && se.Line <= len(b.Lines) {
			line = b.Line + se.Line - 1
			se.Line = line // the message names the page's line, not the block's
		} else {
			se.Line = 0 // a line of the completion, not of the page
		}
	}
	return line, fmt.Sprintf("yaml block of line %d (mark it %q if it is no spider): %v", b.Line-1, NotASpider, err)
}

// isWholeSpider reports whether the YAML has name at its top level.
func isWholeSpider(text string) bool { return hasTopKey(text, "name") }

// hasTopKey reports whether the YAML text is a mapping with key at its top level.
func hasTopKey(text, key string) bool {
	var doc yaml.Node
	if yaml.Unmarshal([]byte(text), &doc) != nil || len(doc.Content) == 0 {
		return false
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}
