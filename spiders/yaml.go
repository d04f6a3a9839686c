package spiders

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// SpecError is an error in a YAML spider file, located by file, line and key path.
type SpecError struct {
	// File is the name given to Parse, or the path given to LoadFile.
	File string
	// Line is 1-based; 0 when the YAML parser did not say.
	Line int
	// Key is the path of the offending key ("items[0].fields.price"); "" at the top level.
	Key string
	// Err is the cause.
	Err error
}

// Error reads "spiders: FILE:LINE: KEY: cause".
func (e *SpecError) Error() string {
	var b strings.Builder
	b.WriteString("spiders: ")
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	msg := strings.TrimPrefix(e.Err.Error(), "spiders: ")
	if e.Key != "" && !strings.HasPrefix(msg, e.Key) {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(msg)
	return b.String()
}

// Unwrap returns the cause.
func (e *SpecError) Unwrap() error { return e.Err }

// LoadFile reads and compiles the YAML spider at path; see Parse.
func LoadFile(path string) (*Spider, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("spiders: read spider file: %w", err)
	}
	return Parse(path, data)
}

// Parse compiles a declarative YAML spider into a Spider with one callback, "parse".
// name is the file name used in messages. The format (see testdata/shop.yaml):
//
//	name: shop                    # crawl name (ValidateName)
//	start_urls: [http://127.0.0.1:8080/]
//	allowed_domains: [127.0.0.1]  # host names, any port; subdomains included
//	follow:                       # links to follow from every page
//	  - links: "a[href]"          # CSS selector of elements with href (or src); default a[href]
//	    allow: ["^/p/"]           # regexes on path+query; any must match (none: all links)
//	    deny: ["^/private/"]      # regexes on path+query; none may match
//	items:
//	  - type: product
//	    when: "div.product"       # yield only on pages where this matches; "" or absent: always
//	    key: [url]                # fields identifying the item; absent: url
//	    key_missing: dead         # an item lacking a key field: a dead letter (dead), or keyed by its page's URL (url)
//	    fields:                   # "CSS::text" (default), "CSS::attr(NAME)", or a mapping
//	      url: "link[rel=canonical]::attr(href)"
//	      name: ".product-name::text"
//	      price: {css: ".price", type: price}          # the long form: see below
//	      tags: {css: ".tags li", all: true}
//	      brand: {jsonld: Product, path: brand.name}
//	settings: {concurrency: 32, user_agent: "...", download_timeout: 30s}  # see Settings
//	render: true                  # load pages in a browser: true, false or auto (Spider.Render)
//	page:                         # what the browser does on a page (Spider.Page)
//	  wait: {selector: ".product"} # or networkidle, {ms: 500}
//	  block: [image, font, media] # the default; [none] blocks nothing
//	  actions: [{scroll: {until_idle: true}}, {click: "#more"}, {fill: {selector: "#q", value: "x"}}]
//
// A follow rule may carry render and page too: they apply to the requests it makes.
//
// The callback yields nothing for a page that is not HTML. Otherwise it yields one item
// per items rule whose when matches, and a request, through Response.Follow, for each
// link that passes a follow rule. Scope (allowed_domains, max_depth) is left to the
// pipeline. A field written as a string is taken from the first element its selector
// matches (text trimmed with runs of whitespace collapsed; href and src attributes
// resolved to absolute URLs; a field that matches nothing is left out). A field written
// as a mapping (the long form) has a source: css (a selector as above), jsonld or
// microdata (the page's structured data of a schema.org type, with a path into it); and
// optionally all (every match, as a list), re, replace, strip, split, join, type (text,
// int, number, price, currency, url), default, and fields (a list of objects, one per
// element css matches, their fields read from the element). fieldRule has the order
// they apply in; docs/spiders-yaml.md has each.
//
// Every error is a *SpecError naming the file, line and key. What is not an error but
// the writer should know is reported in warnings, returned and kept in Spider.Warnings,
// one "FILE:LINE: ..." each: a deprecated key ("shop.yaml:12: settings.revisit_after is
// deprecated: write settings.revisit.after"; the old key still works), or a key that
// belongs to the format but whose feature is not built yet ("KEY is accepted but not
// implemented yet; it has no effect").
func Parse(name string, data []byte) (*Spider, []string, error) {
	p := &yamlParser{file: name}
	sp, err := p.spider(data)
	if err != nil {
		return nil, p.warnings, err
	}
	sp.Warnings = p.warnings
	return sp, p.warnings, nil
}

// yamlParser walks the node tree of one file, collecting warnings.
type yamlParser struct {
	file     string
	warnings []string
}

// pair is one key of a mapping with its value.
type pair struct {
	key     string
	keyNode *yaml.Node
	value   *yaml.Node
}

func (p *yamlParser) spider(data []byte) (*Spider, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &SpecError{File: p.file, Line: 1, Err: errors.New("empty file: want a mapping with name and start_urls")}
		}
		return nil, p.syntaxError(err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, p.errorf(&next, "", "more than one YAML document in the file")
	} else if !errors.Is(err, io.EOF) {
		return nil, p.syntaxError(err)
	}
	root := resolve(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = resolve(root.Content[0])
	}
	pairs, err := p.mapping(root, "")
	if err != nil {
		return nil, err
	}

	sp := &Spider{}
	rules := &yamlRules{}
	var haveName, haveStart bool
	for _, kv := range pairs {
		n := kv.value
		switch kv.key {
		case "name":
			if sp.Name, err = p.str(n, kv.key); err != nil {
				return nil, err
			}
			if err := ValidateName(sp.Name); err != nil {
				return nil, p.wrap(n, kv.key, err)
			}
			haveName = true
		case "start_urls":
			if sp.StartURLs, err = p.startURLs(n, kv.key); err != nil {
				return nil, err
			}
			haveStart = true
		case "allowed_domains":
			sp.AllowedDomains, err = p.domains(n, kv.key)
		case "sitemap_urls":
			sp.SitemapURLs, err = p.startURLs(n, kv.key)
		case "follow":
			rules.follow, err = p.followRules(n, kv.key)
		case "items":
			rules.items, err = p.itemRules(n, kv.key)
		case "settings":
			err = p.settings(n, kv.key, &sp.Settings)
		case "render":
			sp.Render, err = p.render(n, kv.key)
		case "page":
			sp.Page, err = p.page(n, kv.key)
		case "sink":
			sp.Sink, err = p.sink(n, kv.key)
		case "login":
			sp.Login = &Login{}
			if err := p.decodeStruct(n, kv.key, reflect.ValueOf(sp.Login).Elem(), nil); err != nil {
				return nil, err
			}
			if err := sp.Login.Validate(); err != nil {
				return nil, p.wrap(n, kv.key, err)
			}
		default:
			return nil, p.unknownKey(kv, "", topKeys)
		}
		if err != nil {
			return nil, err
		}
	}
	if !haveName {
		return nil, p.errorf(root, "name", "required key is missing")
	}
	if !haveStart && len(sp.SitemapURLs) == 0 {
		return nil, p.errorf(root, "start_urls", "required key is missing (or give sitemap_urls)")
	}
	rules.render = sp.Render
	for i := range rules.follow {
		rules.follow[i].pageType = index("follow", i)
	}
	sp.Handle(DefaultCallback, rules.parse)
	for _, r := range rules.items {
		if sp.ItemFields == nil {
			sp.ItemFields = map[string][]string{}
		}
		for _, f := range r.fields {
			if !slices.Contains(sp.ItemFields[r.typ], f.name) {
				sp.ItemFields[r.typ] = append(sp.ItemFields[r.typ], f.name)
			}
		}
	}
	if len(rules.follow) > 0 {
		sp.FollowFilter = rules.follows
	}
	if err := sp.Validate(); err != nil {
		return nil, p.wrap(root, "", err)
	}
	sp.definition = yamlDefinition(root, data)
	return sp, nil
}

func (p *yamlParser) startURLs(n *yaml.Node, key string) ([]string, error) {
	urls, err := listOf(p, n, key, func(it *yaml.Node, k string) (string, error) {
		s, err := p.str(it, k)
		if err != nil {
			return "", err
		}
		if _, err := NewRequest(s, DefaultCallback); err != nil {
			return "", p.wrap(it, k, err)
		}
		return s, nil
	})
	if err == nil && len(urls) == 0 {
		return nil, p.errorf(n, key, "want at least one url")
	}
	return urls, err
}

func (p *yamlParser) domains(n *yaml.Node, key string) ([]string, error) {
	return listOf(p, n, key, func(it *yaml.Node, k string) (string, error) {
		s, err := p.str(it, k)
		if err != nil {
			return "", err
		}
		if _, err := normalizeDomain(s); err != nil {
			return "", p.wrap(it, k, err)
		}
		return strings.TrimSpace(s), nil
	})
}

func (p *yamlParser) followRules(n *yaml.Node, key string) ([]followRule, error) {
	return listOf(p, n, key, p.followRule)
}

func (p *yamlParser) followRule(it *yaml.Node, k string) (followRule, error) {
	r := followRule{}
	pairs, err := p.mapping(it, k)
	if err != nil {
		return r, err
	}
	links := "a[href]"
	linksNode := it
	for _, kv := range pairs {
		kk := k + "." + kv.key
		switch kv.key {
		case "links":
			links, err = p.str(kv.value, kk)
			linksNode = kv.value
		case "allow":
			r.allow, err = p.regexps(kv.value, kk)
		case "deny":
			r.deny, err = p.regexps(kv.value, kk)
		case "render":
			r.render, err = p.render(kv.value, kk)
		case "page":
			r.page, err = p.page(kv.value, kk)
		default:
			return r, p.unknownKey(kv, k, followKeys)
		}
		if err != nil {
			return r, err
		}
	}
	if r.links, err = compileSelector(links); err != nil {
		return r, p.wrap(linksNode, k+".links", err)
	}
	return r, nil
}

func (p *yamlParser) regexps(n *yaml.Node, key string) ([]*regexp.Regexp, error) {
	return listOf(p, n, key, func(it *yaml.Node, k string) (*regexp.Regexp, error) {
		s, err := p.str(it, k)
		if err != nil {
			return nil, err
		}
		re, err := regexp.Compile(s)
		if err != nil {
			return nil, p.errorf(it, k, "invalid regex %q: %w", s, err)
		}
		return re, nil
	})
}

func (p *yamlParser) itemRules(n *yaml.Node, key string) ([]itemRule, error) {
	return listOf(p, n, key, p.itemRule)
}

func (p *yamlParser) itemRule(n *yaml.Node, key string) (itemRule, error) {
	var r itemRule
	pairs, err := p.mapping(n, key)
	if err != nil {
		return r, err
	}
	var keyNodes []*yaml.Node
	haveFields := false
	for _, kv := range pairs {
		k := key + "." + kv.key
		v := kv.value
		switch kv.key {
		case "type":
			if r.typ, err = p.str(v, k); err != nil {
				return r, err
			}
			if r.typ = strings.TrimSpace(r.typ); r.typ == "" {
				return r, p.errorf(v, k, "empty item type")
			}
		case "when":
			s, err := p.str(v, k)
			if err != nil {
				return r, err
			}
			if strings.TrimSpace(s) != "" {
				if r.when, err = compileSelector(s); err != nil {
					return r, p.wrap(v, k, err)
				}
			}
		case "key":
			if keyNodes, err = p.list(v, k); err != nil {
				return r, err
			}
			for j, kn := range keyNodes {
				s, err := p.str(kn, index(k, j))
				if err != nil {
					return r, err
				}
				r.key = append(r.key, s)
			}
		case "key_missing":
			s, err := p.str(v, k)
			if err != nil {
				return r, err
			}
			switch strings.TrimSpace(s) {
			case "dead":
			case "url":
				r.keyByURL = true
			default:
				return r, p.errorf(v, k, "want dead (an item missing a key field is a dead letter) or url (it is keyed by its page's URL), got %q", s)
			}
		case "fields":
			if r.fields, err = p.fieldRules(v, k, false); err != nil {
				return r, err
			}
			haveFields = true
		default:
			return r, p.unknownKey(kv, key, itemKeys)
		}
	}
	if r.typ == "" {
		return r, p.errorf(n, key+".type", "required key is missing")
	}
	if !haveFields {
		return r, p.errorf(n, key+".fields", "required key is missing")
	}
	for j, name := range r.key {
		if !r.hasField(name) {
			return r, p.errorf(keyNodes[j], index(key+".key", j), "field %q is not in fields", name)
		}
	}
	return r, nil
}

func (r *itemRule) hasField(name string) bool {
	for _, f := range r.fields {
		if f.name == name {
			return true
		}
	}
	return false
}

// index returns "key[i]".
func index(key string, i int) string { return key + "[" + strconv.Itoa(i) + "]" }

// sink reads the sink key: a path or a postgres:// URL (processors.Open opens it when
// the store stage starts; here only its form is checked).
func (p *yamlParser) sink(n *yaml.Node, key string) (string, error) {
	s, err := p.str(n, key)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(s) == "" {
		return "", p.errorf(n, key, "want a JSONL or CSV path or a postgres:// URL, got an empty string")
	}
	lower := strings.ToLower(s)
	if strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://") {
		if _, err := url.Parse(s); err != nil {
			return "", p.errorf(n, key, "not a URL: %v", errors.Unwrap(err))
		}
	} else if strings.Contains(lower, "://") {
		return "", p.errorf(n, key, "want a JSONL or CSV path or a postgres:// URL, got another URL")
	}
	return s, nil
}
