package spiders

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"net/textproto"
	"path"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// FingerprintRules shape the request fingerprints a spider's duplicate filter compares
// (Settings.Fingerprint). The zero value is the default: method, CanonicalURL and body,
// byte for byte the fingerprint of Fingerprint. In YAML, under settings:
//
//	fingerprint:
//	  drop_params: ["utm_*", "sessionid"]
//	  lowercase_path: true
//	  headers: ["Accept-Language"]
//	  body: false
//
// Query parameter names are matched after their escapes are normalised (utm%5Fsource
// is utm_source), ignoring case, against glob patterns as path.Match reads them ('*'
// any run of characters but '/', '?' one character, [a-z] a class). A parameter is
// part of the fingerprint when it matches none of DropParams and, if KeepParams is not
// empty, one of KeepParams.
type FingerprintRules struct {
	// DropParams are query parameter name patterns left out of the fingerprint
	// (tracking and session parameters: "utm_*", "sessionid").
	DropParams []string `yaml:"drop_params" json:"drop_params,omitempty"`
	// KeepParams, when not empty, are the only query parameter name patterns the
	// fingerprint keeps (DropParams still apply).
	KeepParams []string `yaml:"keep_params" json:"keep_params,omitempty"`
	// LowercasePath lower-cases the ASCII letters of the URL's path in the fingerprint,
	// for servers whose paths ignore case. Default false. The query is not changed.
	LowercasePath bool `yaml:"lowercase_path" json:"lowercase_path,omitempty"`
	// Headers names request headers whose values are part of the fingerprint (names in
	// any case; a request's own header, else the spider's settings.headers, else
	// empty), for pages that differ by them (Accept-Language, a currency cookie).
	Headers []string `yaml:"headers" json:"headers,omitempty"`
	// Body says whether the request body is part of the fingerprint. Default (nil)
	// true; false takes POSTs of one URL with different bodies for one page.
	Body *bool `yaml:"body" json:"body,omitempty"`
}

// IsZero reports whether the rules are the default ones.
func (f *FingerprintRules) IsZero() bool {
	return len(f.DropParams) == 0 && len(f.KeepParams) == 0 && !f.LowercasePath && len(f.Headers) == 0 &&
		(f.Body == nil || *f.Body)
}

// Validate reports a pattern path.Match cannot read or a header name that is not an
// HTTP token.
func (f *FingerprintRules) Validate() error {
	for _, list := range [][]string{f.DropParams, f.KeepParams} {
		for _, p := range list {
			if _, err := path.Match(strings.ToLower(p), ""); err != nil || p == "" {
				return fmt.Errorf("spiders: settings.fingerprint: parameter pattern %q is not a glob pattern", p)
			}
		}
	}
	for _, h := range f.Headers {
		if !httpguts.ValidHeaderFieldName(h) {
			return fmt.Errorf("spiders: settings.fingerprint.headers: invalid header name %q", h)
		}
	}
	return nil
}

// keepParam reports whether the query parameter called name stays in the fingerprint.
func (f *FingerprintRules) keepParam(name string) bool {
	name = strings.ToLower(name)
	match := func(patterns []string) bool {
		for _, p := range patterns {
			if ok, _ := path.Match(strings.ToLower(p), name); ok {
				return true
			}
		}
		return false
	}
	if match(f.DropParams) {
		return false
	}
	return len(f.KeepParams) == 0 || match(f.KeepParams)
}

// Fingerprint returns the fingerprint of r under the rules: SHA-256 (its first
// FingerprintSize bytes) of the upper-cased method, a NUL byte, the canonical URL as
// the rules change it, a NUL byte and the body (empty when Body is false), then for
// each named header, in order of its canonical name, a NUL byte, the name, ':' and the
// value. defaults are the spider's settings.headers. With the zero rules it is
// Fingerprint(r.HTTPMethod(), r.URL, r.Body).
func (f *FingerprintRules) Fingerprint(r *Request, defaults map[string]string) ([FingerprintSize]byte, error) {
	var fp [FingerprintSize]byte
	o := canonOpts{lowerPath: f.LowercasePath}
	if len(f.DropParams) > 0 || len(f.KeepParams) > 0 {
		o.keep = f.keepParam
	}
	canon, err := canonicalURL(r.URL, o)
	if err != nil {
		return fp, err
	}
	var body []byte
	if f.Body == nil || *f.Body {
		body = r.Body
	}
	return fingerprintOf(r.HTTPMethod(), canon, body, func(h hash.Hash) {
		for _, name := range f.headerNames() {
			v, ok := headerValue(r.Headers, name)
			if !ok {
				v, _ = headerValue(defaults, name)
			}
			h.Write([]byte{0})
			h.Write([]byte(name))
			h.Write([]byte{':'})
			h.Write([]byte(v))
		}
	}), nil
}

// headerNames returns Headers in canonical form, sorted, each once.
func (f *FingerprintRules) headerNames() []string {
	if len(f.Headers) == 0 {
		return nil
	}
	names := make([]string, len(f.Headers))
	for i, h := range f.Headers {
		names[i] = textproto.CanonicalMIMEHeaderKey(h)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// headerValue returns the value of the header called name in h, whatever the case of
// its key there.
func headerValue(h map[string]string, name string) (string, bool) {
	if v, ok := h[name]; ok {
		return v, true
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// RequestFingerprint returns the key the crawl's duplicate filter keeps for r: nil for
// a request with DontFilter (it is fetched even when seen); else the hash of what
// FingerprintFunc returns (nil again when that is empty) when the spider has one; else
// the fingerprint of its Settings.Fingerprint rules (by default Request.Fingerprint's).
func (s *Spider) RequestFingerprint(r *Request) ([]byte, error) {
	if r.DontFilter {
		return nil, nil
	}
	if s.FingerprintFunc != nil {
		key, err := s.FingerprintFunc(r)
		if err != nil || len(key) == 0 {
			return nil, err
		}
		sum := sha256.Sum256(key)
		return sum[:FingerprintSize], nil
	}
	rules := &s.Settings.Fingerprint
	var sum [FingerprintSize]byte
	var err error
	if rules.IsZero() {
		sum, err = r.Fingerprint()
	} else {
		sum, err = rules.Fingerprint(r, s.Settings.Headers)
	}
	if err != nil {
		return nil, err
	}
	return sum[:], nil
}

// DefaultFingerprintRules is FingerprintRulesDigest of a spider with the default rules
// and no FingerprintFunc.
const DefaultFingerprintRules = "default"

// FingerprintRulesDigest identifies how the spider fingerprints requests: "default"
// (DefaultFingerprintRules) for the default rules, else a hash of the rules (patterns
// and header names as they compare) and of whether a FingerprintFunc replaces them (a
// change inside a FingerprintFunc is not seen). A crawl stores it to tell when its
// spider's rules changed (the seen set keeps the keys of the old ones).
func (s *Spider) FingerprintRulesDigest() string {
	rules := s.Settings.Fingerprint
	if rules.IsZero() && s.FingerprintFunc == nil {
		return DefaultFingerprintRules
	}
	lower := func(list []string) []string {
		out := make([]string, len(list))
		for i, p := range list {
			out[i] = strings.ToLower(p)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	body := rules.Body == nil || *rules.Body
	b, _ := json.Marshal(map[string]any{"drop_params": lower(rules.DropParams), "keep_params": lower(rules.KeepParams),
		"lowercase_path": rules.LowercasePath, "headers": rules.headerNames(), "body": body, "func": s.FingerprintFunc != nil})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
