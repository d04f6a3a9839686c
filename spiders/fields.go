package spiders

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"
)

// fieldRule extracts one field of an item of a YAML spider. The short form of a field
// ("CSS::text", "CSS::attr(NAME)") sets name, sel and attr and nothing else (plain):
// the text or attribute of the first element sel matches, as YAML spiders have always
// read it. The long form adds where else the values come from, which of them are
// kept, how they are shaped and what type they end as (see docs/spiders-yaml.md,
// "Fields"), in this order:
//
//	source (css, jsonld, microdata + path) -> first value, or every one (all)
//	-> replace -> strip -> re -> split -> join -> type -> default
type fieldRule struct {
	name string
	// plain: the short form.
	plain bool

	// The source: a CSS selector (sel, nil for the row itself in a row's fields) and
	// the attribute read (attr; "" reads the text); or the objects of structured data
	// (JSON-LD, microdata) whose @type is schemaType, and path in them.
	source     fieldSource
	sel        cascadia.Selector
	attr       string
	schemaType string
	path       dataPath

	all      bool
	replace  [][2]string // old, new; applied in order
	strip    string      // characters trimmed from both ends, besides white space
	re       *regexp.Regexp
	split    string
	hasSplit bool
	join     string
	hasJoin  bool
	typ      fieldType
	def      any         // nil: none
	rows     []fieldRule // fields of each element sel matches (a list of objects)
}

// fieldSource is where a field's values come from.
type fieldSource int

const (
	sourceCSS fieldSource = iota
	sourceJSONLD
	sourceMicrodata
)

// fieldType is what a field's values are converted to.
type fieldType int

const (
	typeNone     fieldType = iota // as found: text from css, JSON values from structured data
	typeText                      // a string; numbers and the like written as text
	typeInt                       // a whole number (int64)
	typeNumber                    // a number (float64)
	typePrice                     // the amount of a price (float64)
	typeCurrency                  // the currency of a price (ISO 4217 code or its symbol)
	typeURL                       // a URL resolved against the page
)

// fieldTypes are the names of the types, as YAML writes them.
var fieldTypes = map[string]fieldType{
	"text": typeText, "int": typeInt, "number": typeNumber, "price": typePrice,
	"currency": typeCurrency, "url": typeURL,
}

// fieldPage is one HTML page as the fields of a YAML spider read it: the response,
// its document, and its structured data, read once the first field asks for it.
type fieldPage struct {
	res          *Response
	root         *html.Node
	jsonld       []any
	microdata    []any
	haveJSONLD   bool
	haveMicro    bool
	typedObjects map[fieldSource]map[string][]map[string]any
}

// extract returns the field's value under scope (the page's root, or a row), false
// when it has none.
func (f *fieldRule) extract(pg *fieldPage, scope *html.Node) (any, bool) {
	if f.plain {
		return f.extractPlain(pg.res, scope)
	}
	var v any
	var ok bool
	if f.rows != nil {
		v, ok = f.extractRows(pg, scope)
	} else {
		v, ok = f.extractShaped(pg, scope)
	}
	if !ok && f.def != nil {
		return f.def, true
	}
	return v, ok
}

// extractPlain is the short form: the text (trimmed, whitespace collapsed) or the
// attribute (trimmed; href and src resolved) of the first element matching under
// scope, false when none does or it lacks the attribute.
func (f *fieldRule) extractPlain(res *Response, scope *html.Node) (any, bool) {
	n := scope
	if f.sel != nil {
		if n = cascadia.Query(scope, f.sel); n == nil {
			return nil, false
		}
	}
	return elementValue(res, n, f.attr)
}

// elementValue returns the text of n, or its attribute name.
func elementValue(res *Response, n *html.Node, name string) (string, bool) {
	if name == "" {
		return nodeText(n), true
	}
	v, ok := attr(n, name)
	if !ok {
		return "", false
	}
	v = strings.TrimSpace(v)
	if name == "href" || name == "src" {
		if abs, err := res.Resolve(cleanHref(v)); err == nil {
			v = abs
		}
	}
	return v, true
}

// elements returns the elements under scope (its descendants, not scope itself) the
// field's selector matches: the first only unless all; scope itself when the selector
// is nil.
func (f *fieldRule) elements(scope *html.Node) []*html.Node {
	switch {
	case f.sel == nil:
		return []*html.Node{scope}
	case f.all:
		return cascadia.QueryAll(scope, f.sel)
	}
	if n := cascadia.Query(scope, f.sel); n != nil {
		return []*html.Node{n}
	}
	return nil
}

// values returns the field's values as found: the first only unless all.
func (f *fieldRule) values(pg *fieldPage, scope *html.Node) []any {
	var out []any
	if f.source == sourceCSS {
		for _, n := range f.elements(scope) {
			if v, ok := elementValue(pg.res, n, f.attr); ok {
				out = append(out, v)
			}
		}
		return out
	}
	for _, obj := range pg.objects(f.source, f.schemaType) {
		more := f.path.eval(obj, func(v any) bool {
			out = append(out, v)
			return f.all
		})
		if !more {
			break
		}
	}
	return out
}

// extractShaped is the long form without rows (see fieldRule).
func (f *fieldRule) extractShaped(pg *fieldPage, scope *html.Node) (any, bool) {
	vals := f.values(pg, scope)
	shaped := make([]any, 0, len(vals))
	for _, v := range vals {
		shaped = f.shape(v, shaped)
	}
	if f.hasJoin && len(shaped) > 0 {
		parts := make([]string, len(shaped))
		for i, v := range shaped {
			parts[i] = textOf(v)
		}
		shaped = append(shaped[:0], strings.Join(parts, f.join))
	}
	out := shaped[:0]
	for _, v := range shaped {
		if t, ok := f.convert(pg, v); ok {
			out = append(out, t)
		}
	}
	switch {
	case len(out) == 0:
		return nil, false
	case (f.all || f.hasSplit) && !f.hasJoin:
		return out, true
	}
	return out[0], true
}

// extractRows returns an object of the row fields for each element the selector
// matches (those that yield no field, or only empty texts, left out): a list, or with all: false the first
// element's object.
func (f *fieldRule) extractRows(pg *fieldPage, scope *html.Node) (any, bool) {
	var rows []any
	for _, n := range f.elements(scope) {
		obj := make(map[string]any, len(f.rows))
		for i := range f.rows {
			if v, ok := f.rows[i].extract(pg, n); ok {
				obj[f.rows[i].name] = v
			}
		}
		if rowHasValue(obj) {
			rows = append(rows, obj)
		}
	}
	switch {
	case len(rows) == 0:
		return nil, false
	case f.all:
		return rows, true
	}
	return rows[0], true
}

// rowHasValue reports whether a row has a field that is not an empty string (the short
// form keeps an empty text: an empty <tr> would be a row of them).
func rowHasValue(row map[string]any) bool {
	for _, v := range row {
		if s, ok := v.(string); !ok || s != "" {
			return true
		}
	}
	return false
}

// hasTextSteps reports whether the field shapes its values as text.
func (f *fieldRule) hasTextSteps() bool {
	return len(f.replace) > 0 || f.strip != "" || f.re != nil || f.hasSplit
}

// shape appends to out what v becomes through replace, strip, re and split: none,
// one or (split) several values. Strings are trimmed, and an empty one is no value.
// A value that is not a string goes through these steps as its text (textOf), and
// is kept as it is when the field has none of them.
func (f *fieldRule) shape(v any, out []any) []any {
	if v == nil {
		return out
	}
	s, isString := v.(string)
	if !isString {
		if !f.hasTextSteps() {
			return append(out, v)
		}
		s = textOf(v)
	}
	for _, r := range f.replace {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	if f.strip != "" {
		s = strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(f.strip, r) })
	}
	if f.re != nil {
		m := f.re.FindStringSubmatch(s)
		if m == nil {
			return out
		}
		s = m[min(1, len(m)-1)] // the first group, or the whole match without one
	}
	if f.hasSplit {
		for _, part := range strings.Split(s, f.split) {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
		return out
	}
	if s = strings.TrimSpace(s); s != "" {
		out = append(out, s)
	}
	return out
}

// convert returns v as the field's type, false when it is not one (a price with no
// number in it).
func (f *fieldRule) convert(pg *fieldPage, v any) (any, bool) {
	machine := f.source != sourceCSS
	switch f.typ {
	case typeNone:
		return v, true
	case typeText:
		return textOf(v), true
	case typeInt:
		switch x := v.(type) {
		case string:
			return parseInt(x, machine)
		case float64:
			return wholeInt(x)
		}
	case typeNumber, typePrice:
		switch x := v.(type) {
		case string:
			if machine {
				return parseMachineNumber(x)
			}
			return parseNumber(x)
		case float64:
			return x, true
		}
	case typeCurrency:
		if s, ok := v.(string); ok {
			return parseCurrency(s)
		}
	case typeURL:
		if s, ok := v.(string); ok {
			if abs, err := pg.res.Resolve(cleanHref(s)); err == nil {
				return abs, true
			}
		}
	}
	return nil, false
}

// textOf returns a value as text: a string as it is, a number as JSON writes it
// (1299, 12.5), anything else as JSON.
func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// objects returns the objects of the page's structured data (JSON-LD or microdata)
// whose @type is typ, in document order, outer before inner (the keys of an object in
// sorted order, which puts @graph first).
func (pg *fieldPage) objects(src fieldSource, typ string) []map[string]any {
	if objs, ok := pg.typedObjects[src][typ]; ok {
		return objs
	}
	var data []any
	if src == sourceJSONLD {
		if !pg.haveJSONLD {
			pg.jsonld, pg.haveJSONLD = readJSONLD(pg.root), true
		}
		data = pg.jsonld
	} else {
		if !pg.haveMicro {
			pg.microdata, pg.haveMicro = readMicrodata(pg.root, pg.res), true
		}
		data = pg.microdata
	}
	var objs []map[string]any
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			if hasSchemaType(x["@type"], typ) {
				objs = append(objs, x)
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k])
			}
		}
	}
	walk(data)
	if pg.typedObjects == nil {
		pg.typedObjects = map[fieldSource]map[string][]map[string]any{}
	}
	if pg.typedObjects[src] == nil {
		pg.typedObjects[src] = map[string][]map[string]any{}
	}
	pg.typedObjects[src][typ] = objs
	return objs
}

// hasSchemaType reports whether an @type value (a string or a list of them) names typ,
// by itself or as the last part of a URL or a prefixed name ("https://schema.org/Product",
// "schema:Product").
func hasSchemaType(v any, typ string) bool {
	switch x := v.(type) {
	case string:
		if x == typ {
			return true
		}
		if i := strings.LastIndexAny(x, "/#:"); i >= 0 {
			return x[i+1:] == typ
		}
	case []any:
		for _, e := range x {
			if hasSchemaType(e, typ) {
				return true
			}
		}
	}
	return false
}
