package handlers

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// Counters of item fields, in the crawl's stats: item_pages:<type> counts the pages
// that yielded an item of the type, field_pages:<type>.<field> those where one of them
// had a value for the field; items_empty counts the items not stored because every
// field was empty.
const (
	itemPagesPrefix  = "item_pages:"
	fieldPagesPrefix = "field_pages:"
	itemsEmpty       = "items_empty"
)

// EmptyFieldFormat is the warning about a field that had a value on none of the first
// pages of its item type: field, type, pages.
const EmptyFieldFormat = "field %q of item type %q matched on none of the first %d pages of that type: check its selector"

// fieldCheck is the parse stage's look at the items a page yields: it counts, per item
// type, the pages and, per field, the pages where the field had a value; it drops items
// whose every field is empty; and once a process has seen a type on its first N pages
// it warns about each field that had a value on none of them, once per crawl (the
// first process to get there records the warning in the crawl's meta hash).
type fieldCheck struct {
	declared map[string][]string // the spider's ItemFields
	after    int                 // N; < 0: no warning
	counters *streams.Counters
	rdb      redis.UniversalClient
	meta     string // the crawl's meta hash, where warnings given are recorded
	log      *zap.Logger

	mu    sync.Mutex
	types map[string]*typeFields
}

// typeFields is what this process knows of one item type.
type typeFields struct {
	pagesCounter string
	fields       []string          // declared, then learnt from items, in order
	counters     map[string]string // field -> its counter
	pages        int               // pages seen, up to the check
	matched      map[string]int    // pages with a value, per field, up to the check
	checked      bool
}

// newFieldCheck returns the field check of the parse stage of sp's crawl.
func newFieldCheck(sp *spiders.Spider, rdb redis.UniversalClient, meta string, counters *streams.Counters, log *zap.Logger) *fieldCheck {
	after := sp.Settings.WarnEmptyFieldAfter
	if after == 0 {
		after = spiders.DefaultWarnEmptyField
	}
	return &fieldCheck{declared: sp.ItemFields, after: after, counters: counters, rdb: rdb, meta: meta, log: log,
		types: map[string]*typeFields{}}
}

// page counts the items one page yielded and returns those to keep: every item but
// those whose fields are all empty.
func (c *fieldCheck) page(ctx context.Context, items []spiders.Item) []spiders.Item {
	if len(items) == 0 {
		return items
	}
	kept := items[:0]
	matched := map[string]map[string]bool{} // type -> fields with a value on this page
	for _, it := range items {
		m := matched[it.Type]
		if m == nil {
			m = map[string]bool{}
			matched[it.Type] = m
		}
		empty := true
		for f, v := range it.Fields {
			has := hasValue(v)
			m[f] = m[f] || has
			empty = empty && !has
		}
		if empty {
			c.add(itemsEmpty, 1)
			continue
		}
		kept = append(kept, it)
	}
	var warn []string // "type\x00field" whose check failed on this page
	c.mu.Lock()
	for typ, m := range matched {
		t := c.typeOf(typ)
		for f := range m {
			t.learn(typ, f)
		}
		c.add(t.pagesCounter, 1)
		for _, f := range t.fields {
			n := int64(0)
			if m[f] {
				n = 1
			}
			c.add(t.counters[f], n) // 0 too: the field shows in the stats with no match
		}
		if t.checked || c.after < 0 {
			continue
		}
		t.pages++
		for f := range m {
			if m[f] {
				t.matched[f]++
			}
		}
		if t.pages >= c.after {
			t.checked = true
			for _, f := range t.fields {
				if t.matched[f] == 0 {
					warn = append(warn, typ+"\x00"+f)
				}
			}
			t.matched = nil
		}
	}
	c.mu.Unlock()
	for _, w := range warn {
		typ, f, _ := strings.Cut(w, "\x00")
		c.warnOnce(ctx, typ, f)
	}
	return kept
}

// typeOf returns what is known of item type typ, made with its declared fields. Under mu.
func (c *fieldCheck) typeOf(typ string) *typeFields {
	t := c.types[typ]
	if t == nil {
		t = &typeFields{pagesCounter: itemPagesPrefix + typ, counters: map[string]string{}, matched: map[string]int{}}
		for _, f := range c.declared[typ] {
			t.learn(typ, f)
		}
		c.types[typ] = t
	}
	return t
}

// learn adds field f of type typ when it is new.
func (t *typeFields) learn(typ, f string) {
	if _, ok := t.counters[f]; !ok {
		t.fields = append(t.fields, f)
		t.counters[f] = fieldPagesPrefix + typ + "." + f
	}
}

// warnOnce logs EmptyFieldFormat for a field unless some process of the crawl did.
func (c *fieldCheck) warnOnce(ctx context.Context, typ, f string) {
	first := true
	if c.rdb != nil && c.meta != "" {
		ok, err := c.rdb.HSetNX(ctx, c.meta, "warned:empty_field:"+typ+"."+f, 1).Result()
		first = err != nil || ok // say it when Redis cannot tell: a warning twice beats none
	}
	if first {
		c.log.Warn(fmt.Sprintf(EmptyFieldFormat, f, typ, c.after), zap.String("type", typ), zap.String("field", f))
	}
}

func (c *fieldCheck) add(counter string, n int64) {
	if c.counters != nil {
		c.counters.Add(counter, n)
	}
}

// hasValue reports whether a field's value is not empty: nil, "", and empty (or
// all-whitespace) strings, slices and maps are empty; numbers and booleans are values.
func hasValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return strings.TrimSpace(x) != ""
	case []any:
		return slices.ContainsFunc(x, hasValue)
	case map[string]any:
		for _, e := range x {
			if hasValue(e) {
				return true
			}
		}
		return false
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Slice, reflect.Map, reflect.Array:
		return r.Len() > 0
	case reflect.Pointer, reflect.Interface:
		return !r.IsNil()
	}
	return true
}

// TypeFields is how often the fields of one item type had a value, from a crawl's
// counters (FieldsOf).
type TypeFields struct {
	// Type is the item type.
	Type string
	// Pages is how many pages yielded an item of the type.
	Pages int64
	// Fields are its fields, by name.
	Fields []FieldCount
}

// FieldCount is how many pages had a value for one field.
type FieldCount struct {
	// Field is the field's name.
	Field string
	// Pages is how many pages of its type had a value for it.
	Pages int64
}

// FieldsOf reads the field counters of a crawl's stats (the parse stage keeps them),
// sorted by type and field.
func FieldsOf(stats map[string]int64) []TypeFields {
	var out []TypeFields
	byType := map[string]int{}
	for k, n := range stats {
		if typ, ok := strings.CutPrefix(k, itemPagesPrefix); ok {
			byType[typ] = len(out)
			out = append(out, TypeFields{Type: typ, Pages: n})
		}
	}
	for k, n := range stats {
		rest, ok := strings.CutPrefix(k, fieldPagesPrefix)
		if !ok {
			continue
		}
		// The longest type that prefixes the key: a type may hold a dot.
		best := -1
		for typ, i := range byType {
			if strings.HasPrefix(rest, typ+".") && (best < 0 || len(typ) > len(out[best].Type)) {
				best = i
			}
		}
		if best >= 0 {
			out[best].Fields = append(out[best].Fields, FieldCount{Field: rest[len(out[best].Type)+1:], Pages: n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	for i := range out {
		sort.Slice(out[i].Fields, func(a, b int) bool { return out[i].Fields[a].Field < out[i].Fields[b].Field })
	}
	return out
}
