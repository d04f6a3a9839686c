package spiders

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ByteSize is a number of bytes, written in YAML as an integer or with a unit:
// "512KB", "64MB", "1.5GB" (KB, MB, GB, TB and KiB, MiB, GiB, TiB are all powers of
// 1024, as in Redis's configuration), or "100B".
type ByteSize int64

var byteUnits = map[string]float64{"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10,
	"M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30,
	"T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40}

// ParseByteSize reads "64MB", "1.5GiB", "4096" and the like.
func ParseByteSize(s string) (ByteSize, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.ToUpper(strings.TrimSpace(t[i:]))
	}
	mult, ok := byteUnits[unit]
	f, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || num == "" {
		return 0, fmt.Errorf("spiders: invalid size %q: want bytes like 4096, \"512KB\" or \"64MB\"", s)
	}
	v := f * mult
	if v < 0 || v > math.MaxInt64/2 {
		return 0, fmt.Errorf("spiders: size %q out of range", s)
	}
	return ByteSize(v), nil
}

// String writes b with the largest binary unit that divides it ("64MB").
func (b ByteSize) String() string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}} {
		if b != 0 && int64(b)%u.n == 0 {
			return strconv.FormatInt(int64(b)/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(b), 10) + "B"
}

// StreamRetention bounds what a stream keeps of the entries every consumer group has
// acked (for replays and late post-processors); the stream trimmers of package streams
// apply it. Entries a group has not acked are kept whatever the retention. All zero:
// nothing is kept once acked. MaxAge alone keeps acked entries younger than it;
// MaxBytes alone keeps the newest acked entries up to that much stream memory; both:
// entries that satisfy both. MinCount keeps at least the last MinCount entries whatever
// the others say.
type StreamRetention struct {
	// MaxAge is the age past which acked entries are removed.
	MaxAge time.Duration `yaml:"max_age"`
	// MaxBytes caps the stream's memory in Redis (MEMORY USAGE); the oldest acked
	// entries go first.
	MaxBytes ByteSize `yaml:"max_bytes"`
	// MinCount is the fewest entries kept, the newest, whatever MaxAge and MaxBytes say.
	MinCount int64 `yaml:"min_count"`
}

// Keeps reports whether r keeps anything once acked.
func (r StreamRetention) Keeps() bool { return r.MaxAge > 0 || r.MaxBytes > 0 || r.MinCount > 0 }

// String is "max_age=10m0s max_bytes=64MB min_count=5" (the parts set), or "until
// acked"; ParseStreamRetention reads it back.
func (r StreamRetention) String() string {
	var parts []string
	if r.MaxAge > 0 {
		parts = append(parts, "max_age="+r.MaxAge.String())
	}
	if r.MaxBytes > 0 {
		parts = append(parts, "max_bytes="+r.MaxBytes.String())
	}
	if r.MinCount > 0 {
		parts = append(parts, "min_count="+strconv.FormatInt(r.MinCount, 10))
	}
	if len(parts) == 0 {
		return "until acked"
	}
	return strings.Join(parts, " ")
}

// ParseStreamRetention reads what StreamRetention.String writes ("until acked",
// "max_age=10m0s max_bytes=64MB min_count=5").
func ParseStreamRetention(s string) (StreamRetention, error) {
	var r StreamRetention
	s = strings.TrimSpace(s)
	if s == "" || s == "until acked" {
		return r, nil
	}
	for _, part := range strings.Fields(s) {
		k, v, ok := strings.Cut(part, "=")
		var err error
		switch {
		case !ok:
			err = fmt.Errorf("no '='")
		case k == "max_age":
			r.MaxAge, err = time.ParseDuration(v)
		case k == "max_bytes":
			r.MaxBytes, err = ParseByteSize(v)
		case k == "min_count":
			r.MinCount, err = strconv.ParseInt(v, 10, 64)
		default:
			err = fmt.Errorf("unknown key %q", k)
		}
		if err != nil {
			return StreamRetention{}, fmt.Errorf("spiders: retention %q: %s: %w", s, part, err)
		}
	}
	return r, nil
}

// RetainedStreams are the streams settings.retention may name.
var RetainedStreams = []string{"requests", "responses", "items"}

// DefaultRetention is what each stream keeps when settings.retention does not say:
// requests and responses nothing once every group acked them (bodies leave Redis once
// parsed), items a day but at most 16 MB.
func DefaultRetention() map[string]StreamRetention {
	return map[string]StreamRetention{
		"requests":  {},
		"responses": {},
		"items":     {MaxAge: 24 * time.Hour, MaxBytes: 16 << 20},
	}
}

// EffectiveRetention returns the retention of every stream: the spider's settings over
// DefaultRetention.
func (s *Settings) EffectiveRetention() map[string]StreamRetention {
	out := DefaultRetention()
	for k, v := range s.Retention {
		out[k] = v
	}
	return out
}

// validateRetention checks settings.retention.
func (s *Settings) validateRetention() error {
	for name, r := range s.Retention {
		known := false
		for _, k := range RetainedStreams {
			known = known || k == name
		}
		switch {
		case !known:
			return fmt.Errorf("spiders: settings.retention.%s: unknown stream (want requests, responses or items)", name)
		case r.MaxAge < 0:
			return negative("retention."+name+".max_age", r.MaxAge)
		case r.MaxBytes < 0:
			return negative("retention."+name+".max_bytes", r.MaxBytes)
		case r.MinCount < 0:
			return negative("retention."+name+".min_count", r.MinCount)
		}
	}
	return nil
}
