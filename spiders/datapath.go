package spiders

import (
	"fmt"
	"strconv"
	"strings"
)

// dataPath is a path into structured data (JSON-LD, microdata) as a field's path key
// writes it: keys separated by dots, each with optional [n] indexes ("offers.price",
// "image[0]", "review[1].author.name", "@id"). It cannot name a key holding '.', '['
// or ']'.
type dataPath []pathStep

// pathStep is a key, or an index when key is "".
type pathStep struct {
	key   string
	index int
}

// compileDataPath parses a path; "" is the empty path (the node itself).
func compileDataPath(s string) (dataPath, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var p dataPath
	for i, part := range strings.Split(s, ".") {
		key := part
		if j := strings.IndexAny(part, "[]"); j >= 0 {
			key = part[:j]
		}
		if key == "" && (i > 0 || !strings.HasPrefix(part, "[")) {
			return nil, fmt.Errorf("invalid path %q: empty key", s)
		}
		if key != "" {
			p = append(p, pathStep{key: key})
		}
		for rest := part[len(key):]; rest != ""; {
			end := strings.IndexByte(rest, ']')
			if rest[0] != '[' || end < 0 {
				return nil, fmt.Errorf("invalid path %q: want [n] after %q", s, key)
			}
			n, err := strconv.Atoi(rest[1:end])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("invalid path %q: index %q is not a number of 0 or more", s, rest[1:end])
			}
			p = append(p, pathStep{index: n})
			rest = rest[end+1:]
		}
	}
	return p, nil
}

// eval calls fn with each value the path reaches from v, in order. Lists are opened on
// the way: a key applies to each element of a list, and a list the path ends on gives
// its elements. An index picks an element of a list; on a value that is not a list, [0]
// is the value itself (JSON-LD writes one value or a list of them alike). Null values
// reach nothing. fn returns false to stop.
func (p dataPath) eval(v any, fn func(any) bool) bool {
	switch x := v.(type) {
	case nil:
		return true
	case []any:
		if len(p) > 0 && p[0].key == "" {
			if p[0].index < len(x) {
				return p[1:].eval(x[p[0].index], fn)
			}
			return true
		}
		for _, e := range x {
			if !p.eval(e, fn) {
				return false
			}
		}
		return true
	}
	if len(p) == 0 {
		return fn(v)
	}
	if p[0].key == "" {
		if p[0].index == 0 {
			return p[1:].eval(v, fn)
		}
		return true
	}
	if m, ok := v.(map[string]any); ok {
		return p[1:].eval(m[p[0].key], fn)
	}
	return true
}
