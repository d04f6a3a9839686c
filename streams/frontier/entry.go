package frontier

import (
	"encoding/json"
	"strconv"
	"strings"
)

// A waiting request, as its host's queue holds it (the one place that encodes one).
//
// Most requests a crawl finds are a URL of the host whose queue holds them, a callback,
// a depth and a priority, nothing else. Such a request waits in its compact form: one
// byte for the scheme (1 http, 2 https), then "<depth>[,<priority>[,<callback>]]"
// (empty parts left out from the end; 0 written as nothing), then the URL after its
// scheme and host: "\x015/p/157360" is http://<host>/p/157360 at depth 5, about a tenth
// of the request's JSON. Every other request waits whole: its payload as given, behind
// a 0 byte when the payload itself starts with a byte below 3. The scripts turn an entry
// back into the request's JSON (expandLua) as they hand it out, so the requests stream
// and everything that reads it see the request wire format (spiders.MarshalRequest,
// version 1) and nothing else.

// Entry kinds: the first byte of an entry.
const (
	entryWhole = 0x00 // the payload follows
	entryHTTP  = 0x01
	entryHTTPS = 0x02
	entryKinds = 0x03 // a payload starting below this is written behind entryWhole
)

// entryOf returns the entry of candidate c for its host's queue.
func entryOf(c *Candidate) string {
	if c.URL != "" {
		if e, ok := compactEntry(c.Host, c.URL, c.Callback, c.Priority, c.Depth); ok {
			return e
		}
		if c.Payload == nil {
			c.Payload = plainJSON(c.URL, c.Callback, c.Priority, c.Depth)
		}
	}
	return wholeEntry(c.Payload)
}

// wholeEntry is the entry of a request kept whole.
func wholeEntry(payload []byte) string {
	if len(payload) > 0 && payload[0] < entryKinds {
		return string(rune(entryWhole)) + string(payload)
	}
	return string(payload)
}

// compactEntry returns the compact entry of a plain request of host, or false when the
// request cannot be written so: a scheme other than http(s), a URL whose authority is
// not written as host is (upper case, a default port, user info), a URL or host that
// would need escaping in JSON, a callback name with other than letters, digits, '_',
// '.' and '-'.
func compactEntry(host, rawURL, callback string, priority, depth int) (string, bool) {
	var kind byte
	var rest string
	switch {
	case strings.HasPrefix(rawURL, "http://"):
		kind, rest = entryHTTP, rawURL[len("http://"):]
	case strings.HasPrefix(rawURL, "https://"):
		kind, rest = entryHTTPS, rawURL[len("https://"):]
	default:
		return "", false
	}
	rest, ok := strings.CutPrefix(rest, host)
	if !ok || host == "" || rest != "" && rest[0] != '/' && rest[0] != '?' || !jsonSafe(host) || !jsonSafe(rest) || !nameSafe(callback) {
		return "", false
	}
	b := make([]byte, 0, 12+len(callback)+len(rest))
	b = append(b, kind)
	if depth != 0 {
		b = strconv.AppendInt(b, int64(depth), 10)
	}
	if priority != 0 || callback != "" {
		b = append(b, ',')
		if priority != 0 {
			b = strconv.AppendInt(b, int64(priority), 10)
		}
	}
	if callback != "" {
		b = append(b, ',')
		b = append(b, callback...)
	}
	return string(append(b, rest...)), true
}

// jsonSafe reports whether s can stand in a JSON string as it is: printable ASCII
// without '"' and '\'.
func jsonSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// nameSafe reports whether a callback name can stand in a compact entry's header.
func nameSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// plainJSON is the wire form (spiders.MarshalRequest, version 1) of a request with only
// a URL, a callback, a priority and a depth, as expandLua writes it.
func plainJSON(rawURL, callback string, priority, depth int) []byte {
	b, _ := json.Marshal(struct { // strings and ints: never fails
		V        int    `json:"v"`
		URL      string `json:"url"`
		Callback string `json:"callback,omitempty"`
		Priority int    `json:"priority,omitempty"`
		Depth    int    `json:"depth,omitempty"`
	}{1, rawURL, callback, priority, depth})
	return b
}

// expandLua defines expand(host, e): the request (its JSON, or the payload kept whole)
// of entry e of host's queue; and whole(payload), wholeEntry in Lua.
const expandLua = `
local function expand(host, e)
  local k = string.byte(e, 1)
  if k == nil or k > 2 then return e end
  if k == 0 then return string.sub(e, 2) end
  local head, rest = string.match(e, '^.([^/?]*)(.*)$')
  local d, p, cb = string.match(head, '^(%-?%d*),?(%-?%d*),?(.*)$')
  local out = '{"v":1,"url":"' .. (k == 1 and 'http://' or 'https://') .. host .. rest .. '"'
  if cb ~= '' then out = out .. ',"callback":"' .. cb .. '"' end
  if p ~= '' then out = out .. ',"priority":' .. p end
  if d ~= '' then out = out .. ',"depth":' .. d end
  return out .. '}'
end
-- whole returns the entry of a request kept whole (see wholeEntry).
local function whole(payload)
  local k = string.byte(payload, 1)
  if k ~= nil and k < 3 then return '\0' .. payload end
  return payload
end
`
