package wire_test

import (
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/handlers/internal/wire"
	"github.com/streamcrawl/streamcrawl/spiders"
)

// The values spiders.Settings.Validate accepts for response_compression and
// response_dict are this package's: each of its constants is accepted, and the error
// for another value lists exactly them (spiders builds it from its own list).
func TestSettingsAcceptTheWireValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		setting string
		values  []string
		set     func(s *spiders.Settings, v string)
	}{
		{"response_compression", []string{wire.CompressS2, wire.CompressFastest, wire.CompressDefault, wire.CompressBetter, wire.CompressOff},
			func(s *spiders.Settings, v string) { s.ResponseCompression = v }},
		{"response_dict", []string{wire.DictOn, wire.DictOff},
			func(s *spiders.Settings, v string) { s.ResponseDict = v }},
	} {
		for _, v := range c.values {
			var s spiders.Settings
			c.set(&s, v)
			s.SetDefaults()
			if err := s.Validate(); err != nil {
				t.Errorf("%s %q (a wire value): %v", c.setting, v, err)
			}
		}
		var s spiders.Settings
		c.set(&s, "nope")
		s.SetDefaults()
		err := s.Validate()
		want := "want " + strings.Join(c.values[:len(c.values)-1], ", ") + " or " + c.values[len(c.values)-1]
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s \"nope\": %v; want an error ending %q (the wire's values)", c.setting, err, want)
		}
	}
}
