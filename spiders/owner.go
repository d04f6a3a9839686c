package spiders

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"slices"

	"gopkg.in/yaml.v3"
)

// Fingerprint identifies the spider a crawl belongs to: a hash of its definition, so
// that a crawl started by one spider is not resumed, reset or fed by another of the
// same name. A YAML spider's definition is its file as parsed (comments, layout and key
// order do not count: the document decoded and written again with sorted keys); a Go
// spider's is its name, start and sitemap URLs, allowed domains, the settings that
// differ from their defaults (so defaulting the settings, or a build that adds a
// setting, does not change it), its login, the names of its callbacks and how it renders pages.
// The fingerprint rules (settings.fingerprint) are left out: they may change on a
// running crawl, which stores their digest apart (FingerprintRulesDigest).
func (s *Spider) Fingerprint() string {
	def := s.definition
	if def == nil {
		def = s.goDefinition()
	}
	sum := sha256.Sum256(def)
	return hex.EncodeToString(sum[:12])
}

// goDefinition is the definition of a spider declared in Go (see Fingerprint).
func (s *Spider) goDefinition() []byte {
	settings := map[string]any{}
	set, def := s.Settings, Settings{}
	set.SetDefaults()
	def.SetDefaults()
	all, defaults := jsonFields(set), jsonFields(def)
	for k, v := range all {
		if !reflect.DeepEqual(v, defaults[k]) {
			settings[k] = v
		}
	}
	delete(settings, "Fingerprint") // see FingerprintRulesDigest
	callbacks := make([]string, 0, len(s.Callbacks))
	for name := range s.Callbacks {
		callbacks = append(callbacks, name)
	}
	slices.Sort(callbacks)
	b, _ := json.Marshal(map[string]any{"kind": "go", "name": s.Name, "start_urls": s.StartURLs, "sitemap_urls": s.SitemapURLs,
		"allowed_domains": s.AllowedDomains, "settings": settings, "login": s.Login, "callbacks": callbacks,
		"render": s.Render, "page": s.Page})
	return b
}

// jsonFields returns the fields of v as JSON objects hold them (nil when v does not
// encode).
func jsonFields(v any) map[string]any {
	var fields map[string]any
	if b, err := json.Marshal(v); err == nil {
		_ = json.Unmarshal(b, &fields)
	}
	return fields
}

// yamlDefinition is the definition of a YAML spider whose document is root: decoded and
// written again as JSON (sorted keys), or the file data as it is when that cannot be
// done.
func yamlDefinition(root *yaml.Node, data []byte) []byte {
	var doc any
	if err := root.Decode(&doc); err == nil {
		withoutFingerprintRules(doc)
		if top, ok := doc.(map[string]any); ok {
			delete(top, "sink") // where the items go is not what the crawl is
		}
		if b, err := json.Marshal(map[string]any{"kind": "yaml", "spider": doc}); err == nil {
			return b
		}
	}
	return append([]byte("yaml\n"), data...)
}

// withoutFingerprintRules removes settings.fingerprint from a decoded YAML spider (and
// settings when nothing else is left in it): the rules may change on a running crawl
// (see FingerprintRulesDigest).
func withoutFingerprintRules(doc any) {
	top, ok := doc.(map[string]any)
	if !ok {
		return
	}
	settings, ok := top["settings"].(map[string]any)
	if !ok {
		return
	}
	if _, ok := settings["fingerprint"]; !ok {
		return
	}
	delete(settings, "fingerprint")
	if len(settings) == 0 {
		delete(top, "settings")
	}
}
