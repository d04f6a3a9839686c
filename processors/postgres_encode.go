package processors

import (
	"bytes"
	"encoding/json"
	"strings"
)

// PostgreSQL text and jsonb cannot hold the NUL character, and text must be valid UTF-8.
// Scraped pages do contain NULs now and then; rather than fail the item, the sink
// replaces them with U+FFFD, as it does invalid UTF-8 (which encoding/json already
// replaces in field values).

// jsonForPostgres encodes v as JSON that jsonb accepts.
func jsonForPostgres(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	if !bytes.Contains(b, []byte(`\u0000`)) {
		return string(b), nil
	}
	// Rare: decode the JSON form generically (numbers kept exact), clean, encode again.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return "", err
	}
	b, err = json.Marshal(withoutNUL(generic))
	return string(b), err
}

// withoutNUL returns v, a decoded JSON value, with NUL characters in its strings and
// object keys replaced.
func withoutNUL(v any) any {
	switch v := v.(type) {
	case string:
		return strings.ReplaceAll(v, "\x00", "\uFFFD")
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[strings.ReplaceAll(k, "\x00", "\uFFFD")] = withoutNUL(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = withoutNUL(x)
		}
		return out
	}
	return v
}

// textForPostgres returns s as valid UTF-8 without NUL characters.
func textForPostgres(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}
