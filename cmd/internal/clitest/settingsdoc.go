package clitest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// SettingsKey is one YAML key of a spider's settings, as the settings table lists it.
type SettingsKey struct {
	// Key is the key's path under settings: "concurrency", "budget.pages_per_host",
	// "limits[].delay", "retention.<stream>.max_age".
	Key string
	// Type is its YAML type: duration, size, int, number, bool, string, mapping,
	// "list of string", "map of mapping", ...
	Type string
	// Default is its default: the value SetDefaults gives a zero Settings, in
	// backticks, where it gives one; else the "Default X." of its doc comment
	// (or the X of `"X" (the default`); else "".
	Default string
	// Meaning is the field's doc comment, whitespace collapsed.
	Meaning string
}

// mapKeyNames name the keys of the settings that are maps of mappings, as the table
// writes them ("retention.<stream>.max_age"); other maps' keys are <name>.
var mapKeyNames = map[string]string{"retention": "stream"}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	byteSizeType = reflect.TypeOf(spiders.ByteSize(0))
)

// SettingsKeys lists every YAML key of spiders.Settings, nested ones included, in the
// order of the fields; dir is the spiders package's source folder, whose doc comments
// give the meanings.
func SettingsKeys(dir string) ([]SettingsKey, error) {
	docs, err := fieldDocs(dir)
	if err != nil {
		return nil, err
	}
	var s spiders.Settings
	s.SetDefaults()
	var keys []SettingsKey
	settingsKeys(reflect.ValueOf(s), "", docs, &keys)
	return keys, nil
}

// SettingsTable is the Markdown table of SettingsKeys(dir): key, type, default, meaning.
func SettingsTable(dir string) (string, error) {
	keys, err := SettingsKeys(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| key | type | default | meaning |\n|---|---|---|---|\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k.Key, k.Type, k.Default, textCell(k.Meaning))
	}
	return b.String(), nil
}

// textCell escapes prose for a table cell: '|' and the '<' that would open a tag.
func textCell(s string) string { return strings.ReplaceAll(Cell(s), "<", "&lt;") }

func settingsKeys(v reflect.Value, prefix string, docs map[string]map[string]string, out *[]SettingsKey) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		key := prefix + tag
		doc := strings.Join(strings.Fields(docs[t.Name()][f.Name]), " ")
		fv := v.Field(i)
		k := SettingsKey{Key: key, Type: yamlType(f.Type), Meaning: yamlMeaning(f.Name, doc), Default: defaultValue(fv)}
		if k.Default == "" {
			k.Default = textCell(docDefault(doc))
		}
		*out = append(*out, k)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			if fv.Kind() == reflect.Pointer {
				fv = reflect.Zero(ft)
			}
			settingsKeys(fv, key+".", docs, out)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			settingsKeys(reflect.Zero(ft.Elem()), key+"[].", docs, out)
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
			name := mapKeyNames[key]
			if name == "" {
				name = "name"
			}
			settingsKeys(reflect.Zero(ft.Elem()), key+".<"+name+">.", docs, out)
		}
	}
}

// yamlMeaning is a field's doc comment as a YAML reader takes it: without the Go
// field's name it opens with ("MaxDepth drops ..." is "Drops ...", "Min is the shortest
// interval" is "The shortest interval").
func yamlMeaning(field, doc string) string {
	rest, ok := strings.CutPrefix(doc, field+" ")
	if !ok || rest == "" {
		return doc
	}
	for _, verb := range []string{"is ", "are "} {
		if r, ok := strings.CutPrefix(rest, verb); ok && r != "" {
			rest = r
			break
		}
	}
	return strings.ToUpper(rest[:1]) + rest[1:]
}

// yamlType names the YAML type of a settings field of type t.
func yamlType(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t == byteSizeType:
		return "size"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return yamlType(t.Elem())
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Slice:
		return "list of " + yamlType(t.Elem())
	case reflect.Map:
		return "map of " + yamlType(t.Elem())
	case reflect.Struct:
		return "mapping"
	}
	return t.String()
}

// defaultValue writes a non-zero scalar in backticks as YAML would take it, or "".
func defaultValue(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.IsZero() {
		return ""
	}
	var s string
	switch {
	case v.Type() == durationType:
		s = shortDuration(time.Duration(v.Int()))
	case v.Type() == byteSizeType:
		s = spiders.ByteSize(v.Int()).String()
	case v.Kind() == reflect.Struct || v.Kind() == reflect.Slice || v.Kind() == reflect.Map:
		return ""
	default:
		s = fmt.Sprint(v.Interface())
	}
	return "`" + Cell(s) + "`"
}

// shortDuration writes d without its zero units: 5m, not 5m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

var (
	defaultRE    = regexp.MustCompile(`\bDefault\b:?\s*`)
	theDefaultRE = regexp.MustCompile(`(\S+) \(the default\b`)
	leadParenRE  = regexp.MustCompile(`^\([^)]*\)\s*`)
)

// docDefault finds the default a doc comment states: the X of "Default X." (up to the
// sentence's end, a ';' or a ':'), else the X of `"X" (the default`, else "".
func docDefault(doc string) string {
	if loc := defaultRE.FindStringIndex(doc); loc != nil {
		rest := doc[loc[1]:]
		end := len(rest)
		for i := 0; i < len(rest); i++ {
			c := rest[i]
			if c == ';' || c == ':' || c == '.' && (i+1 == len(rest) || rest[i+1] == ' ') {
				end = i
				break
			}
		}
		if d := strings.TrimSpace(leadParenRE.ReplaceAllString(rest[:end], "")); d != "" {
			return d
		}
	}
	if m := theDefaultRE.FindStringSubmatch(doc); m != nil {
		if d := strings.Trim(m[1], `"',;:`); d != "" {
			return d
		}
	}
	return ""
}

// fieldDocs reads the doc comments of the struct fields of the Go package in dir
// (test files aside): type name -> field name -> doc.
func fieldDocs(dir string) (map[string]map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	docs := map[string]map[string]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("clitest: %w", err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("clitest: %w", err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			m := map[string]string{}
			for _, fld := range st.Fields.List {
				for _, id := range fld.Names {
					m[id.Name] = fld.Doc.Text()
				}
			}
			docs[ts.Name.Name] = m
			return false
		})
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("clitest: no Go structs in %s", dir)
	}
	return docs, nil
}
