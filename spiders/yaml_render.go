package spiders

import (
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// render reads a render mode: true, false or auto.
func (p *yamlParser) render(n *yaml.Node, key string) (Render, error) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		var b bool
		if err := n.Decode(&b); err == nil {
			r, _ := ParseRender(b)
			return r, nil
		}
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		if r, err := ParseRender(n.Value); err == nil && r != RenderDefault {
			return r, nil
		}
	}
	return "", p.errorf(n, key, "want true, false or auto, got %s", describe(n))
}

// page reads page behaviour: wait (networkidle, or a mapping of networkidle, selector
// and ms), block (a list of kinds) and actions (a list of click, scroll or fill).
func (p *yamlParser) page(n *yaml.Node, key string) (*Page, error) {
	pairs, err := p.mapping(n, key)
	if err != nil {
		return nil, err
	}
	pg := &Page{}
	for _, kv := range pairs {
		k := key + "." + kv.key
		switch kv.key {
		case "wait":
			pg.Wait, err = p.wait(kv.value, k)
		case "block":
			pg.Block, err = p.block(kv.value, k)
		case "actions":
			pg.Actions, err = listOf(p, kv.value, k, p.action)
			if err == nil && len(pg.Actions) > MaxActions {
				err = p.errorf(kv.value, k, "%d actions, at most %d", len(pg.Actions), MaxActions)
			}
		default:
			return nil, p.errorf(kv.keyNode, key, "unknown key %q (want wait, block or actions)", kv.key)
		}
		if err != nil {
			return nil, err
		}
	}
	return pg, nil
}

func (p *yamlParser) wait(n *yaml.Node, key string) (*Wait, error) {
	n = resolve(n)
	w := &Wait{}
	if n.Kind == yaml.ScalarNode {
		if s, _ := p.str(n, key); s == "networkidle" {
			w.NetworkIdle = true
			return w, nil
		}
		return nil, p.errorf(n, key, "want networkidle or a mapping of networkidle, selector and ms, got %s", describe(n))
	}
	if err := p.decodeStruct(n, key, reflect.ValueOf(w).Elem(), nil); err != nil {
		return nil, err
	}
	if err := w.validate(); err != nil {
		return nil, p.wrap(n, key, err)
	}
	return w, nil
}

func (p *yamlParser) block(n *yaml.Node, key string) ([]string, error) {
	kinds, err := listOf(p, n, key, func(it *yaml.Node, k string) (string, error) {
		s, err := p.str(it, k)
		if err != nil {
			return "", err
		}
		if s = strings.ToLower(strings.TrimSpace(s)); s != BlockNone && !slices.Contains(BlockKinds, s) {
			return "", p.errorf(it, k, "unknown kind %q (want %s, or %s)", s, strings.Join(BlockKinds, ", "), BlockNone)
		}
		return s, nil
	})
	if err != nil {
		return nil, err
	}
	if len(kinds) == 0 {
		return nil, p.errorf(n, key, "an empty list: write [%s] to block nothing", BlockNone)
	}
	if slices.Contains(kinds, BlockNone) && len(kinds) > 1 {
		return nil, p.errorf(n, key, "%q blocks nothing and stands alone", BlockNone)
	}
	return kinds, nil
}

func (p *yamlParser) action(n *yaml.Node, key string) (Action, error) {
	var a Action
	if err := p.decodeStruct(n, key, reflect.ValueOf(&a).Elem(), nil); err != nil {
		return a, err
	}
	if err := a.validate(); err != nil {
		return a, p.wrap(n, key, err)
	}
	return a, nil
}
