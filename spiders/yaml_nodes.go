package spiders

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Helpers that read yaml.Nodes strictly and turn every problem into a *SpecError.

// errorf returns a SpecError at n's line for key.
func (p *yamlParser) errorf(n *yaml.Node, key, format string, args ...any) error {
	return &SpecError{File: p.file, Line: n.Line, Key: key, Err: fmt.Errorf(format, args...)}
}

// wrap returns err as a SpecError at n's line for key.
func (p *yamlParser) wrap(n *yaml.Node, key string, err error) error {
	return &SpecError{File: p.file, Line: n.Line, Key: key, Err: err}
}

// unknownKey returns the error for a key that is not part of the format under parent.
func (p *yamlParser) unknownKey(kv pair, parent string, known []string) error {
	if s := closestKey(kv.key, known); s != "" {
		return p.errorf(kv.keyNode, parent, "unknown key %q (did you mean %q?)", kv.key, s)
	}
	return p.errorf(kv.keyNode, parent, "unknown key %q", kv.key)
}

// The keys of each mapping of a spider file, for "did you mean" (settings, login and
// retention keys come from their structs' yaml tags).
var (
	topKeys    = []string{"name", "start_urls", "allowed_domains", "sitemap_urls", "follow", "items", "settings", "login", "sink"}
	followKeys = []string{"links", "allow", "deny"}
	itemKeys   = []string{"type", "when", "key", "fields"}
)

// closestKey returns the key of known nearest to key when it is near enough to be a
// typo (an edit distance of at most a third of its length, and at least 1), else "".
func closestKey(key string, known []string) string {
	best, bestD := "", max(1, len(key)/3)+1
	for _, k := range known {
		if d := editDistance(strings.ToLower(key), k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// yamlTags returns the yaml tags of the exported fields of struct type t.
func yamlTags(t reflect.Type) []string {
	var tags []string
	for i := 0; i < t.NumField(); i++ {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag != "" && tag != "-" && t.Field(i).IsExported() {
			tags = append(tags, tag)
		}
	}
	return tags
}

var yamlLineRE = regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`)

// syntaxError turns a YAML parser error ("yaml: line 3: ...") into a SpecError.
func (p *yamlParser) syntaxError(err error) error {
	e := &SpecError{File: p.file, Err: fmt.Errorf("invalid yaml: %w", err)}
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Err = fmt.Errorf("invalid yaml: %s", m[2])
		if yamlParserProblems[m[2]] {
			e.Line++
		}
	}
	return e
}

// yamlParserProblems are the problems of yaml.v3's parser (as opposed to its scanner),
// which it reports with a 0-based line number.
var yamlParserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
}

// resolve follows aliases (*anchor) to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// describe names the kind of a node for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "nothing"
		}
		return n.ShortTag()
	}
	return "a document"
}

// mapping returns the keys of a mapping node in order; keys must be strings, once each.
func (p *yamlParser) mapping(n *yaml.Node, key string) ([]pair, error) {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, key, "want a mapping, got %s", describe(n))
	}
	pairs := make([]pair, 0, len(n.Content)/2)
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!null" {
			return nil, p.errorf(k, key, "want a string key, got %s", describe(k))
		}
		if seen[k.Value] {
			return nil, p.errorf(k, key, "duplicate key %q", k.Value)
		}
		seen[k.Value] = true
		pairs = append(pairs, pair{key: k.Value, keyNode: k, value: v})
	}
	return pairs, nil
}

// list returns the elements of a sequence node.
func (p *yamlParser) list(n *yaml.Node, key string) ([]*yaml.Node, error) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n, key, "want a list, got %s", describe(n))
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out[i] = resolve(c)
	}
	return out, nil
}

// listOf parses each element of the list n (at key) with elem, which gets the element
// and its key ("key[i]"), and returns the results in order.
func listOf[T any](p *yamlParser, n *yaml.Node, key string, elem func(it *yaml.Node, k string) (T, error)) ([]T, error) {
	items, err := p.list(n, key)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(items))
	for i, it := range items {
		v, err := elem(it, index(key, i))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// str returns a scalar as a string; numbers are taken as written, booleans and null are
// errors.
func (p *yamlParser) str(n *yaml.Node, key string) (string, error) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode {
		return "", p.errorf(n, key, "want a string, got %s", describe(n))
	}
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float":
		return n.Value, nil
	}
	return "", p.errorf(n, key, "want a string, got %s", describe(n))
}

// strs returns a list of strings.
func (p *yamlParser) strs(n *yaml.Node, key string) ([]string, error) {
	return listOf(p, n, key, p.str)
}
