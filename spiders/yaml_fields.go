package spiders

import (
	"math"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// fieldKeys are the keys of a field's long form (see fieldRule), for "did you mean".
var fieldKeys = []string{"css", "jsonld", "microdata", "path", "all", "re", "replace", "strip", "split", "join", "type", "default", "fields"}

// fieldRules reads the fields mapping of an item rule or, inRow, of a field's rows.
func (p *yamlParser) fieldRules(n *yaml.Node, key string, inRow bool) ([]fieldRule, error) {
	fields, err := p.mapping(n, key)
	if err != nil {
		return nil, err
	}
	if len(fields) == 0 && inRow {
		return nil, p.errorf(n, key, "rows need at least one field")
	} else if len(fields) == 0 {
		return nil, p.errorf(n, key, "an item needs at least one field")
	}
	out := make([]fieldRule, 0, len(fields))
	for _, f := range fields {
		fk := key + "." + f.key
		if strings.TrimSpace(f.key) == "" || strings.HasPrefix(f.key, "_") {
			return nil, p.errorf(f.keyNode, fk, "invalid field name %q: names are non-empty and do not start with '_'", f.key)
		}
		r, err := p.fieldRule(f.value, fk, inRow)
		if err != nil {
			return nil, err
		}
		r.name = f.key
		out = append(out, r)
	}
	return out, nil
}

// fieldRule reads one field: a string (the short form, a selector) or a mapping (the
// long form).
func (p *yamlParser) fieldRule(n *yaml.Node, key string, inRow bool) (fieldRule, error) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		sel, attrName, err := compileFieldSelector(n.Value, inRow)
		if err != nil {
			return fieldRule{}, p.wrap(n, key, err)
		}
		return fieldRule{plain: true, sel: sel, attr: attrName}, nil
	}
	if n.Kind != yaml.MappingNode {
		return fieldRule{}, p.errorf(n, key, "want a string (a selector) or a mapping (a field's long form), got %s", describe(n))
	}
	pairs, err := p.mapping(n, key)
	if err != nil {
		return fieldRule{}, err
	}
	var r fieldRule
	var sources []string
	var css string
	var cssNode, pathNode, rowsNode, allNode *yaml.Node
	var shaping []string // the keys that shape text or convert values, for rows' errors
	for _, kv := range pairs {
		k := key + "." + kv.key
		v := kv.value
		switch kv.key {
		case "css":
			css, err = p.str(v, k)
			cssNode = v
			sources = append(sources, kv.key)
		case "jsonld", "microdata":
			if r.schemaType, err = p.str(v, k); err == nil && strings.TrimSpace(r.schemaType) == "" {
				err = p.errorf(v, k, "want a schema.org type such as Product")
			}
			r.schemaType = strings.TrimSpace(r.schemaType)
			r.source = sourceJSONLD
			if kv.key == "microdata" {
				r.source = sourceMicrodata
			}
			sources = append(sources, kv.key)
		case "path":
			var s string
			if s, err = p.str(v, k); err == nil {
				if r.path, err = compileDataPath(s); err != nil {
					err = p.wrap(v, k, err)
				}
			}
			pathNode = v
		case "all":
			err = p.scalar(v, k, "true or false", &r.all, "!!bool")
			allNode = v
		case "re":
			var s string
			if s, err = p.str(v, k); err == nil {
				if r.re, err = regexp.Compile(s); err != nil {
					err = p.errorf(v, k, "invalid regex %q: %w", s, err)
				}
			}
		case "replace":
			r.replace, err = p.replacements(v, k)
		case "strip":
			if r.strip, err = p.str(v, k); err == nil && r.strip == "" {
				err = p.errorf(v, k, "want the characters to strip (white space always is)")
			}
		case "split":
			if r.split, err = p.str(v, k); err == nil && r.split == "" {
				err = p.errorf(v, k, "want a separator")
			}
			r.hasSplit = true
		case "join":
			r.join, err = p.str(v, k)
			r.hasJoin = true
		case "type":
			var s string
			if s, err = p.str(v, k); err == nil {
				var ok bool
				if r.typ, ok = fieldTypes[strings.TrimSpace(s)]; !ok {
					err = p.errorf(v, k, "unknown type %q (want %s)", s, typeNames())
				}
			}
		case "default":
			r.def, err = p.value(v, k)
		case "fields":
			r.rows, err = p.fieldRules(v, k, true)
			rowsNode = v
		default:
			return r, p.unknownKey(kv, key, fieldKeys)
		}
		if err != nil {
			return r, err
		}
		if kv.key != "css" && kv.key != "jsonld" && kv.key != "microdata" && kv.key != "path" &&
			kv.key != "all" && kv.key != "default" && kv.key != "fields" {
			shaping = append(shaping, kv.key)
		}
	}

	switch {
	case len(sources) == 0:
		return r, p.errorf(n, key, "want one of css, jsonld or microdata: where the field's values come from")
	case len(sources) > 1:
		return r, p.errorf(n, key, "%s: give one source, not several", strings.Join(sources, " and "))
	case inRow && r.source != sourceCSS:
		return r, p.errorf(n, key, "a field of rows reads its row: use css, not %s", sources[0])
	case pathNode != nil && r.source == sourceCSS:
		return r, p.errorf(pathNode, key+".path", "path reads into jsonld or microdata; css has none")
	}
	if r.source == sourceCSS {
		if r.sel, r.attr, err = compileFieldSelector(css, inRow); err != nil {
			return r, p.wrap(cssNode, key+".css", err)
		}
	}
	if rowsNode != nil {
		switch {
		case r.source != sourceCSS:
			return r, p.errorf(rowsNode, key+".fields", "rows are elements: fields goes with css, not %s", sources[0])
		case r.attr != "" || strings.HasSuffix(strings.TrimSpace(css), "::text"):
			return r, p.errorf(cssNode, key+".css", "the css of rows selects elements: no ::text or ::attr()")
		case len(shaping) > 0:
			return r, p.errorf(rowsNode, key+".fields", "a field with rows takes css, all and default; not %s", strings.Join(shaping, ", "))
		}
		if allNode == nil {
			r.all = true // rows are a list unless all: false asks for the first one
		}
	}
	return r, nil
}

// replacements reads replace: a mapping of the text to replace to its replacement, in
// the order written.
func (p *yamlParser) replacements(n *yaml.Node, key string) ([][2]string, error) {
	pairs, err := p.mapping(n, key)
	if err != nil {
		return nil, err
	}
	if len(pairs) == 0 {
		return nil, p.errorf(n, key, "want at least one replacement: {old: new}")
	}
	out := make([][2]string, 0, len(pairs))
	for _, kv := range pairs {
		if kv.key == "" {
			return nil, p.errorf(kv.keyNode, key, "empty text to replace")
		}
		s, err := p.str(kv.value, key+"."+kv.key)
		if kv.value.ShortTag() == "!!null" {
			s, err = "", nil // {"USD": } or {"USD": null}: remove it
		}
		if err != nil {
			return nil, err
		}
		out = append(out, [2]string{kv.key, s})
	}
	return out, nil
}

// value reads a default: a string, number or boolean, or a list or mapping of them, as
// it is stored in items (whole numbers as int64).
func (p *yamlParser) value(n *yaml.Node, key string) (any, error) {
	n = resolve(n)
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return n.Value, nil
		case "!!int":
			var i int64
			err := p.scalar(n, key, "an integer", &i, "!!int")
			return i, err
		case "!!float":
			var f float64
			err := p.scalar(n, key, "a number", &f, "!!float")
			if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
				err = p.errorf(n, key, "want a finite number, got %s", n.Value)
			}
			return f, err
		case "!!bool":
			var b bool
			err := p.scalar(n, key, "a boolean", &b, "!!bool")
			return b, err
		}
		return nil, p.errorf(n, key, "want a value, got %s", describe(n))
	case yaml.SequenceNode:
		return listOf(p, n, key, p.value)
	case yaml.MappingNode:
		pairs, err := p.mapping(n, key)
		if err != nil {
			return nil, err
		}
		m := make(map[string]any, len(pairs))
		for _, kv := range pairs {
			if m[kv.key], err = p.value(kv.value, key+"."+kv.key); err != nil {
				return nil, err
			}
		}
		return m, nil
	}
	return nil, p.errorf(n, key, "want a value, got %s", describe(n))
}

// typeNames lists the field types for messages: "text, int, ... or url".
func typeNames() string {
	names := make([]string, 0, len(fieldTypes))
	for name := range fieldTypes {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return int(fieldTypes[a]) - int(fieldTypes[b]) })
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
