package spiders

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

const revisitHead = "name: shop\nstart_urls: [\"http://example.com/\"]\nsettings:\n" // lines 1-3

// TestRevisitOldKeysLoadAsNew: each old key of a revisit knob loads to the same Settings
// as its settings.revisit key, with a warning that names the file, line, old and new key;
// the new keys load without one.
func TestRevisitOldKeysLoadAsNew(t *testing.T) {
	tests := []struct {
		name, old, new string
		warnings       []string
	}{
		{"after", "  revisit_after: 1d\n", "  revisit:\n    after: 24h\n",
			[]string{"shop.yaml:4: settings.revisit_after is deprecated: write settings.revisit.after"}},
		{"forget_after", "  dedup: bloom\n  dedup_expire_after: 720h\n", "  dedup: bloom\n  revisit: {forget_after: 30d}\n",
			[]string{"shop.yaml:5: settings.dedup_expire_after is deprecated: write settings.revisit.forget_after"}},
		{"rules", "  revisit:\n    - {match: /news/, min: 10m, max: 1d, start: 1h}\n",
			"  revisit:\n    rules:\n      - {match: /news/, min: 10m, max: 1d, start: 1h}\n",
			[]string{"shop.yaml:4: settings.revisit as a list is deprecated: write settings.revisit.rules"}},
		{"rules and after", "  revisit_after: 2h\n  revisit:\n    - {min: 1m, max: 1h}\n",
			"  revisit:\n    rules: [{min: 1m, max: 1h}]\n    after: 2h\n",
			[]string{"shop.yaml:4: settings.revisit_after is deprecated: write settings.revisit.after",
				"shop.yaml:5: settings.revisit as a list is deprecated: write settings.revisit.rules"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldSp, warnings, err := Parse("shop.yaml", []byte(revisitHead+tt.old))
			if err != nil {
				t.Fatal(err)
			}
			newSp, newWarnings, err := Parse("shop.yaml", []byte(revisitHead+tt.new))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(oldSp.Settings, newSp.Settings) || !newSp.Settings.Revisit.Fetches() && newSp.Settings.Revisit.ForgetAfter == 0 {
				t.Errorf("settings (-old +new):\n-%+v\n+%+v", oldSp.Settings.Revisit, newSp.Settings.Revisit)
			}
			if !reflect.DeepEqual(warnings, tt.warnings) || !reflect.DeepEqual(oldSp.Warnings, tt.warnings) {
				t.Errorf("warnings (-want +got):\n-%q\n+%q (Spider.Warnings %q)", tt.warnings, warnings, oldSp.Warnings)
			}
			if len(newWarnings) != 0 || len(newSp.Warnings) != 0 {
				t.Errorf("new keys: warnings %q, want none", newWarnings)
			}
		})
	}
}

// TestRevisitBothFormsIsAnError: a knob written with its old key and in settings.revisit
// is an error at the line of the second.
func TestRevisitBothFormsIsAnError(t *testing.T) {
	tests := []struct {
		name, src, key string
		line           int
		msg            string
	}{
		{"after, old first", "  revisit_after: 1h\n  revisit:\n    after: 2h\n", "settings.revisit.after", 6,
			"settings.revisit.after sets settings.revisit.after, which settings.revisit_after (line 4) set already"},
		{"after, new first", "  revisit: {after: 2h}\n  revisit_after: 1h\n", "settings.revisit_after", 5,
			"settings.revisit_after sets settings.revisit.after, which settings.revisit.after (line 4) set already"},
		{"forget_after", "  dedup_expire_after: 1h\n  revisit:\n    rules: []\n    forget_after: 2h\n", "settings.revisit.forget_after", 7,
			"which settings.dedup_expire_after (line 4) set already: write settings.revisit.forget_after only"},
		{"forget_after, new first", "  revisit:\n    forget_after: 2h\n  dedup_expire_after: 1h\n", "settings.dedup_expire_after", 6,
			"settings.dedup_expire_after sets settings.revisit.forget_after, which settings.revisit.forget_after (line 5) set already"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Parse("shop.yaml", []byte(revisitHead+tt.src))
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("error %v, want a *SpecError", err)
			}
			prefix := fmt.Sprintf("spiders: shop.yaml:%d: %s", tt.line, tt.key)
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.msg) || se.Line != tt.line {
				t.Errorf("error (-want +got):\n-%s...%s\n+%s", prefix, tt.msg, msg)
			}
		})
	}
}

// TestRevisitValidatedAtItsLine: the checks of the revisit knobs are those of before,
// reported at the line of the key that breaks them, in either form, and the knobs keep
// their meaning (item versions on by default when URLs are fetched again).
func TestRevisitValidatedAtItsLine(t *testing.T) {
	tests := []struct {
		src  string
		line int
		msg  string
	}{
		{"  revisit:\n    after: 1h\n    forget_after: 1h\n", 6, "settings.revisit.forget_after (formerly dedup_expire_after) and settings.revisit.after both let URLs through again"},
		{"  revisit_after: 1h\n  dedup_expire_after: 1h\n", 5, "both let URLs through again"},
		{"  dedup: set\n  revisit:\n    forget_after: 1h\n", 6, "needs dedup exact or bloom, not set"},
		{"  revisit:\n    forget_after: 30s\n", 5, "want 0 (never) or at least 1m"},
		{"  revisit:\n    rules:\n      - {min: 30s, max: 1h}\n", 6, "min 30s is below 1m0s"},
		{"  revisit:\n    - {min: 30s, max: 1h}\n", 5, "min 30s is below 1m0s"},
		{"  revisit:\n    rulez: []\n", 5, `unknown key "rulez" (did you mean "rules"?)`},
		{"  revisit: 1h\n", 4, "want a mapping"},
	}
	for _, tt := range tests {
		_, _, err := Parse("shop.yaml", []byte(revisitHead+tt.src))
		var se *SpecError
		if !errors.As(err, &se) || se.Line != tt.line || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%q: error %v, want one at line %d saying %q", tt.src, err, tt.line, tt.msg)
		}
	}
	sp, _, err := Parse("shop.yaml", []byte(revisitHead+"  revisit: {after: 1d}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := sp.Settings.Revisit; r.After != 24*time.Hour || !sp.Settings.ItemVersioned() {
		t.Errorf("revisit %+v, item versions %v; want after 24h, item versions on", r, sp.Settings.ItemVersioned())
	}
}

// The gone pages' knob and the volatile fields load from YAML; a gone_checks below -1 is
// refused.
func TestRevisitGoneChecksAndVolatileLoad(t *testing.T) {
	sp, _, err := Parse("shop.yaml", []byte(revisitHead+"  revisit:\n    rules: [{min: 10m, max: 1d, gone_checks: 3}]\n    volatile: [views, rendered_at]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := sp.Settings.Revisit
	if r.Rules[0].GoneChecks != 3 || !r.IsVolatile("views") || !r.IsVolatile("rendered_at") || r.IsVolatile("price") {
		t.Fatalf("revisit settings %+v, want gone_checks 3 and volatile views, rendered_at", r)
	}
	if !r.Rules[0].Gone(3) || r.Rules[0].Gone(4) {
		t.Error("gone_checks 3: want a 3rd check, no 4th")
	}
	def := RevisitRule{Min: time.Minute, Max: time.Hour}
	if !def.Gone(DefaultGoneChecks) || def.Gone(DefaultGoneChecks+1) {
		t.Errorf("default gone_checks: want %d checks", DefaultGoneChecks)
	}
	if _, _, err := Parse("shop.yaml", []byte(revisitHead+"  revisit:\n    rules: [{min: 10m, max: 1d, gone_checks: -2}]\n")); err == nil ||
		!strings.Contains(err.Error(), "gone_checks") {
		t.Errorf("gone_checks -2: err %v, want it refused", err)
	}
}
