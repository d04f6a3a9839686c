package spiders

import (
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func boolPtr(b bool) *bool { return &b }

// fp returns sp's fingerprint of r as hex ("" for a request not filtered).
func fp(t *testing.T, sp *Spider, r *Request) string {
	t.Helper()
	b, err := sp.RequestFingerprint(r)
	if err != nil {
		t.Fatalf("RequestFingerprint(%s): %v", r.URL, err)
	}
	return hex.EncodeToString(b)
}

// TestFingerprintGolden holds the default fingerprints byte for byte: these values were
// computed by the build before fingerprint rules, so a crawl's seen set keeps its keys.
func TestFingerprintGolden(t *testing.T) {
	t.Parallel()
	golden := []struct {
		r    *Request
		want string
	}{
		{&Request{URL: "https://Shop.Example.com:443/catalog/./items/../p/12345?sort=price&utm_source=x&page=2&q=red%7eshoes#reviews"},
			"4264928d56af5a18f7e9b6a38e304c33"},
		{&Request{URL: "http://example.com/Search?q=1&sessionid=abc", Method: "post", Body: []byte("k=v"),
			Headers: map[string]string{"Accept-Language": "de"}}, "75e84feafbfdc0b7c172f4f38afbe3bb"},
	}
	for _, g := range golden {
		if got := fp(t, &Spider{}, g.r); got != g.want {
			t.Errorf("%s: default fingerprint %s, want %s (the build before rules)", g.r.URL, got, g.want)
		}
		zero := &Spider{Settings: Settings{Fingerprint: FingerprintRules{Body: boolPtr(true)}}} // body: true is the default
		if got := fp(t, zero, g.r); got != g.want {
			t.Errorf("%s: fingerprint with body: true %s, want %s", g.r.URL, got, g.want)
		}
	}
}

func TestFingerprintRules(t *testing.T) {
	t.Parallel()
	const page = "http://example.com/Shop/Item?id=7&color=red"
	tests := []struct {
		name  string
		rules FingerprintRules
		same  []*Request // fingerprints equal to page's under the rules
		other []*Request // fingerprints different from page's
	}{
		{"drop utm_* and sessionid, names in any case", FingerprintRules{DropParams: []string{"UTM_*", "sessionid"}},
			[]*Request{{URL: page + "&utm_source=news&utm_medium=mail"}, {URL: page + "&SessionID=42"},
				{URL: page + "&utm%5Fcampaign=x"}, {URL: "http://example.com/Shop/Item?sessionid=1&color=red&id=7&Utm_Term=q"}},
			[]*Request{{URL: page + "&page=2"}, {URL: page + "&utmx=1"}, {URL: "http://example.com/shop/item?id=7&color=red"}}},
		{"keep only id", FingerprintRules{KeepParams: []string{"id"}},
			[]*Request{{URL: "http://example.com/Shop/Item?id=7"}, {URL: "http://example.com/Shop/Item?id=7&ref=home"}},
			[]*Request{{URL: "http://example.com/Shop/Item?id=8&color=red"}}},
		{"keep id and colo?, drop color", FingerprintRules{KeepParams: []string{"id", "colo?"}, DropParams: []string{"color"}},
			[]*Request{{URL: "http://example.com/Shop/Item?id=7&colour=x"}},
			[]*Request{{URL: "http://example.com/Shop/Item?id=7&colon=x"}}},
		{"lowercase path", FingerprintRules{LowercasePath: true},
			[]*Request{{URL: "http://example.com/shop/ITEM?id=7&color=red"}, {URL: "http://example.com/SHOP/%69tem?color=red&id=7"},
				// an escaped capital is decoded, then lower-cased
				{URL: "http://example.com/shop/%49TEM?id=7&color=red"}, {URL: "http://example.com/%53hop/%49tem?id=7&color=red"}},
			[]*Request{{URL: "http://example.com/Shop/Item?id=7&color=RED"}, {URL: "http://example.com/Shop/It%2Fem?id=7&color=red"}}},
		{"a header in the key", FingerprintRules{Headers: []string{"accept-language"}},
			// without a header of its own a request takes the spider's (settings.headers: en)
			[]*Request{{URL: page, Headers: map[string]string{"Accept-Language": "en"}}, {URL: page, Headers: map[string]string{"ACCEPT-LANGUAGE": "en"}}},
			[]*Request{{URL: page, Headers: map[string]string{"Accept-Language": "de"}}, {URL: page, Headers: map[string]string{"accept-language": ""}}}},
		{"body left out", FingerprintRules{Body: boolPtr(false)},
			[]*Request{{URL: page, Body: []byte("a=1")}, {URL: page, Body: []byte("a=2")}},
			[]*Request{{URL: page, Method: "POST"}}},
	}
	for _, tt := range tests {
		sp := &Spider{Settings: Settings{Fingerprint: tt.rules, Headers: map[string]string{"Accept-Language": "en"}}}
		if err := sp.Settings.Validate(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		base := fp(t, sp, &Request{URL: page})
		if tt.name == "body left out" {
			base = fp(t, sp, &Request{URL: page, Body: []byte("x")})
		}
		for _, r := range tt.same {
			if got := fp(t, sp, r); got != base {
				t.Errorf("%s: %s %q %v: fingerprint differs from %s's", tt.name, r.URL, r.Body, r.Headers, page)
			}
		}
		for _, r := range tt.other {
			if got := fp(t, sp, r); got == base {
				t.Errorf("%s: %s %s %v: fingerprint equals %s's", tt.name, r.Method, r.URL, r.Headers, page)
			}
		}
	}
}

func TestFingerprintFuncAndDontFilter(t *testing.T) {
	t.Parallel()
	sp := &Spider{Settings: Settings{Fingerprint: FingerprintRules{DropParams: []string{"*"}}},
		FingerprintFunc: func(r *Request) ([]byte, error) {
			switch {
			case strings.Contains(r.URL, "bad"):
				return nil, errors.New("bad url")
			case strings.Contains(r.URL, "always"):
				return nil, nil
			}
			return []byte(strings.ToLower(r.URL)), nil
		}}
	if a, b := fp(t, sp, &Request{URL: "http://example.com/A?x=1"}), fp(t, sp, &Request{URL: "http://EXAMPLE.com/a?X=1"}); a != b {
		t.Errorf("hook keys equal, fingerprints differ: %s, %s", a, b)
	}
	if a, b := fp(t, sp, &Request{URL: "http://example.com/a?x=1"}), fp(t, sp, &Request{URL: "http://example.com/a?x=2"}); a == b {
		t.Error("the hook replaces the rules, yet drop_params '*' applied")
	}
	if got := fp(t, sp, &Request{URL: "http://example.com/always"}); got != "" {
		t.Errorf("empty hook key: fingerprint %s, want none", got)
	}
	if _, err := sp.RequestFingerprint(&Request{URL: "http://example.com/bad"}); err == nil {
		t.Error("the hook's error was not returned")
	}
	if got := fp(t, &Spider{}, &Request{URL: "http://example.com/", DontFilter: true}); got != "" {
		t.Errorf("dont_filter: fingerprint %s, want none", got)
	}
}

func TestFingerprintRulesValidate(t *testing.T) {
	t.Parallel()
	for _, r := range []FingerprintRules{{DropParams: []string{"utm_["}}, {KeepParams: []string{""}}, {Headers: []string{"Bad Header"}}} {
		s := Settings{Fingerprint: r}
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "settings.fingerprint") {
			t.Errorf("%+v: error %v, want one naming settings.fingerprint", r, err)
		}
	}
}

// TestFingerprintRulesYAMLAndOwner: the rules read from YAML, and they are left out of
// the spider's own fingerprint (the crawl's owner) and told by their digest instead.
func TestFingerprintRulesYAMLAndOwner(t *testing.T) {
	t.Parallel()
	const doc = `
name: shop
start_urls: ["http://example.com/"]
settings:
  concurrency: 4
  fingerprint:
    drop_params: ["utm_*", "sessionid"]
    keep_params: ["id", "page"]
    lowercase_path: true
    headers: ["Accept-Language"]
    body: false
`
	sp, _, err := Parse("shop.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := FingerprintRules{DropParams: []string{"utm_*", "sessionid"}, KeepParams: []string{"id", "page"},
		LowercasePath: true, Headers: []string{"Accept-Language"}, Body: boolPtr(false)}
	if !reflect.DeepEqual(sp.Settings.Fingerprint, want) {
		t.Errorf("rules %+v, want %+v", sp.Settings.Fingerprint, want)
	}
	without := doc[:strings.Index(doc, "  fingerprint:")]
	plain, _, err := Parse("shop.yaml", []byte(without))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Fingerprint() != plain.Fingerprint() {
		t.Errorf("spider fingerprint changes with the fingerprint rules: %s, %s", sp.Fingerprint(), plain.Fingerprint())
	}
	if plain.FingerprintRulesDigest() != DefaultFingerprintRules || sp.FingerprintRulesDigest() == DefaultFingerprintRules {
		t.Errorf("digests: no rules %q, rules %q", plain.FingerprintRulesDigest(), sp.FingerprintRulesDigest())
	}
	// A YAML spider whose settings hold only the rules is the one without settings.
	only, _, err := Parse("shop.yaml", []byte("name: shop\nstart_urls: [\"http://example.com/\"]\nsettings:\n  fingerprint: {lowercase_path: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	bare, _, err := Parse("shop.yaml", []byte("name: shop\nstart_urls: [\"http://example.com/\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if only.Fingerprint() != bare.Fingerprint() {
		t.Errorf("settings with only fingerprint rules change the spider fingerprint")
	}

	g1 := &Spider{Name: "shop", StartURLs: []string{"http://example.com/"}}
	g2 := *g1
	g2.Settings.Fingerprint = FingerprintRules{DropParams: []string{"utm_*"}}
	if g1.Fingerprint() != g2.Fingerprint() {
		t.Error("a Go spider's fingerprint changes with its fingerprint rules")
	}
	g3 := *g1
	g3.FingerprintFunc = func(*Request) ([]byte, error) { return nil, nil }
	d1, d2, d3 := g1.FingerprintRulesDigest(), g2.FingerprintRulesDigest(), g3.FingerprintRulesDigest()
	if d1 != DefaultFingerprintRules || d2 == d1 || d3 == d1 || d3 == d2 {
		t.Errorf("digests: none %s, rules %s, hook %s", d1, d2, d3)
	}
	// The digest compares the rules as they apply: case and order of patterns and
	// header names do not count.
	g4 := *g1
	g4.Settings.Fingerprint = FingerprintRules{DropParams: []string{"UTM_*", "utm_*"}, Body: boolPtr(true)}
	if g4.FingerprintRulesDigest() != d2 {
		t.Errorf("equivalent rules, digests %s and %s", g4.FingerprintRulesDigest(), d2)
	}
}

func TestDedupExpireAfterSetting(t *testing.T) {
	t.Parallel()
	sp, _, err := Parse("shop.yaml", []byte("name: shop\nstart_urls: [\"http://example.com/\"]\nsettings:\n  dedup: bloom\n  dedup_expire_after: 720h\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Settings.Revisit.ForgetAfter != 720*time.Hour {
		t.Errorf("dedup_expire_after %v, want 720h", sp.Settings.Revisit.ForgetAfter)
	}
	for _, s := range []Settings{{Revisit: RevisitSettings{ForgetAfter: time.Second}}, {Revisit: RevisitSettings{ForgetAfter: -time.Hour}},
		{Revisit: RevisitSettings{ForgetAfter: time.Hour}, Dedup: "set"}, {Revisit: RevisitSettings{ForgetAfter: time.Hour, After: time.Hour}}} {
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "dedup_expire_after") {
			t.Errorf("%+v: error %v, want one naming dedup_expire_after", s, err)
		}
	}
}
