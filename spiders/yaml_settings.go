package spiders

import (
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

var (
	durationType = reflect.TypeOf(time.Duration(0))
	byteSizeType = reflect.TypeOf(ByteSize(0))
)

// settings decodes the settings block into s by the yaml tags of Settings, validating
// after each key so that a value out of range is reported at its own line. The revisit
// knobs' keys of before are read too (revisitKeys).
func (p *yamlParser) settings(n *yaml.Node, key string, s *Settings) error {
	rk := &revisitKeys{p: p, s: s}
	validate := func(kv pair, path string) error {
		if err := s.Validate(); err != nil {
			return p.wrap(kv.value, path, err)
		}
		return nil
	}
	return p.decodeStructWith(n, key, reflect.ValueOf(s).Elem(), func(kv pair, path string) (bool, error) {
		done, err := rk.decode(kv, path, validate)
		if done && err == nil {
			err = validate(kv, path)
		}
		return done, err
	}, validate)
}

// decodeStruct decodes a mapping into the struct v by its fields' yaml tags; other keys are
// errors. after, when not nil, runs after each key is decoded.
func (p *yamlParser) decodeStruct(n *yaml.Node, key string, v reflect.Value, after func(kv pair, path string) error) error {
	return p.decodeStructWith(n, key, v, nil, after)
}

// decodeStructWith is decodeStruct with a first say on each key: decode, when not nil,
// gets every key first and reports whether it took the key (then neither the field
// nor after is looked at).
func (p *yamlParser) decodeStructWith(n *yaml.Node, key string, v reflect.Value,
	decode func(kv pair, path string) (bool, error), after func(kv pair, path string) error) error {
	pairs, err := p.mapping(n, key)
	if err != nil {
		return err
	}
	for _, kv := range pairs {
		path := key + "." + kv.key
		if decode != nil {
			if done, err := decode(kv, path); err != nil || done {
				if err != nil {
					return err
				}
				continue
			}
		}
		i := fieldByTag(v.Type(), kv.key)
		if i < 0 {
			return p.unknownKey(kv, key, yamlTags(v.Type()))
		}
		if err := p.decodeValue(kv.value, path, v.Field(i)); err != nil {
			return err
		}
		if after != nil {
			if err := after(kv, path); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldByTag returns the index of the field of struct type t tagged yaml:"name", or -1.
func fieldByTag(t reflect.Type, name string) int {
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if tag == name && tag != "-" && t.Field(i).IsExported() {
			return i
		}
	}
	return -1
}

// decodeValue decodes a node into v, strictly by v's type: durations are strings like
// "30s" or "14d" (parseDuration), integers and booleans must be written as such.
func (p *yamlParser) decodeValue(n *yaml.Node, key string, v reflect.Value) error {
	n = resolve(n)
	t := v.Type()
	switch {
	case t == durationType:
		s, err := p.str(n, key)
		if err != nil || n.ShortTag() != "!!str" {
			return p.errorf(n, key, "want a duration like \"30s\" or \"14d\", got %s", describe(n))
		}
		d, err := parseDuration(strings.TrimSpace(s))
		if err != nil {
			return p.errorf(n, key, "invalid duration %q: want a duration like \"30s\", \"200ms\" or \"14d\"", s)
		}
		v.SetInt(int64(d))
	case t == byteSizeType:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!str") {
			return p.errorf(n, key, "want a size like \"64MB\", got %s", describe(n))
		}
		b, err := ParseByteSize(n.Value)
		if err != nil {
			return p.wrap(n, key, err)
		}
		v.SetInt(int64(b))
	case t.Kind() == reflect.Pointer:
		e := reflect.New(t.Elem())
		if err := p.decodeValue(n, key, e.Elem()); err != nil {
			return err
		}
		v.Set(e)
	case t.Kind() == reflect.Bool:
		var b bool
		if err := p.scalar(n, key, "a boolean", &b, "!!bool"); err != nil {
			return err
		}
		v.SetBool(b)
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		var i int64
		if err := p.scalar(n, key, "an integer", &i, "!!int"); err != nil {
			return err
		}
		if v.OverflowInt(i) {
			return p.errorf(n, key, "integer %s out of range", n.Value)
		}
		v.SetInt(i)
	case t.Kind() == reflect.Float64:
		var f float64
		if err := p.scalar(n, key, "a number", &f, "!!int", "!!float"); err != nil {
			return err
		}
		v.SetFloat(f)
	case t.Kind() == reflect.String:
		s, err := p.str(n, key)
		if err != nil {
			return err
		}
		v.SetString(s)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		pairs, err := p.mapping(n, key)
		if err != nil {
			return err
		}
		m := reflect.MakeMapWithSize(t, len(pairs))
		for _, kv := range pairs {
			e := reflect.New(t.Elem()).Elem()
			if err := p.decodeValue(kv.value, key+"."+kv.key, e); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(kv.key).Convert(t.Key()), e)
		}
		v.Set(m)
	case t.Kind() == reflect.Slice:
		items, err := p.list(n, key)
		if err != nil {
			return err
		}
		s := reflect.MakeSlice(t, len(items), len(items))
		for i, it := range items {
			if err := p.decodeValue(it, index(key, i), s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
	case t.Kind() == reflect.Struct:
		return p.decodeStruct(n, key, v, nil)
	default:
		return p.errorf(n, key, "settings of type %s are not supported", t)
	}
	return nil
}

// scalar decodes a scalar whose tag is one of tags into out.
func (p *yamlParser) scalar(n *yaml.Node, key, want string, out any, tags ...string) error {
	ok := false
	if n.Kind == yaml.ScalarNode {
		for _, t := range tags {
			ok = ok || n.ShortTag() == t
		}
	}
	if !ok {
		return p.errorf(n, key, "want %s, got %s", want, describe(n))
	}
	if err := n.Decode(out); err != nil {
		return p.errorf(n, key, "want %s: %w", want, err)
	}
	return nil
}
