package spiders

import (
	"fmt"
	"reflect"

	"gopkg.in/yaml.v3"
)

// oldRevisitKeys are the settings keys that settings.revisit replaced, by the knob of
// settings.revisit each one is. settings.revisit written as a list is the old form of
// rules.
var oldRevisitKeys = map[string]string{
	"revisit_after":      "after",
	"dedup_expire_after": "forget_after",
}

// revisitKeys reads settings.revisit and the old keys of its knobs for one settings
// block: an old key is decoded into its knob and warned about, and a knob written both
// ways is an error at the second one.
type revisitKeys struct {
	p   *yamlParser
	s   *Settings
	set map[string]setBy // knob ("after") -> the key that set it
}

// setBy is the key (its path) and line that set a knob.
type setBy struct {
	path string
	line int
}

// decode takes kv when it is settings.revisit or an old key of one of its knobs, and
// reports whether it did. validate runs after each knob of settings.revisit written as
// a mapping, so that a value out of range is reported at its own line.
func (r *revisitKeys) decode(kv pair, path string, validate func(kv pair, path string) error) (bool, error) {
	p := r.p
	if knob, ok := oldRevisitKeys[kv.key]; ok {
		if err := r.mark(knob, kv.keyNode, path); err != nil {
			return true, err
		}
		p.deprecated(kv.keyNode, path, "settings.revisit."+knob)
		f := reflect.ValueOf(&r.s.Revisit).Elem().Field(fieldByTag(reflect.TypeOf(r.s.Revisit), knob))
		return true, p.decodeValue(kv.value, path, f)
	}
	if kv.key != "revisit" {
		return false, nil
	}
	if kv.value.Kind == yaml.SequenceNode {
		if err := r.mark("rules", kv.keyNode, path); err != nil {
			return true, err
		}
		p.deprecated(kv.keyNode, path+" as a list", path+".rules")
		return true, p.decodeValue(kv.value, path, reflect.ValueOf(&r.s.Revisit.Rules).Elem())
	}
	return true, p.decodeStructWith(kv.value, path, reflect.ValueOf(&r.s.Revisit).Elem(), func(k pair, kpath string) (bool, error) {
		if fieldByTag(reflect.TypeOf(r.s.Revisit), k.key) >= 0 {
			return false, r.mark(k.key, k.keyNode, kpath)
		}
		return false, nil
	}, validate)
}

// mark records that the key at path (on n's line) sets knob, or returns the error of a
// knob set before by its other form.
func (r *revisitKeys) mark(knob string, n *yaml.Node, path string) error {
	if prev, ok := r.set[knob]; ok {
		return r.p.errorf(n, path, "%s sets settings.revisit.%s, which %s (line %d) set already: write settings.revisit.%s only",
			path, knob, prev.path, prev.line, knob)
	}
	if r.set == nil {
		r.set = map[string]setBy{}
	}
	r.set[knob] = setBy{path: path, line: n.Line}
	return nil
}

// deprecated warns about the old key what (on n's line) that key replaces.
func (p *yamlParser) deprecated(n *yaml.Node, what, key string) {
	p.warnings = append(p.warnings, fmt.Sprintf("%s:%d: %s is deprecated: write %s", p.file, n.Line, what, key))
}
