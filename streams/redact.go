package streams

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The errors of a Redis URL are text for people (a terminal, a log), and what parses the
// URL quotes it back in ways this package does not choose: url.Parse's *url.Error holds
// the whole input, go-redis names a bad option with its value, a database number is the
// rest of a path that may hold the user info. So the secrets of the URL are taken out
// of the error's text at the one place every error of Connect passes, whatever made it.

// redactURLError is err whose text has every secret of the Redis URL raw (the password
// of its user info, the values of its password= and sentinel_password= options) shown
// as ***; nil when err is nil.
func redactURLError(raw string, err error) error {
	if err == nil {
		return nil
	}
	secrets := urlSecrets(raw)
	if len(secrets) == 0 {
		return err
	}
	return &redactedError{err: err, secrets: secrets}
}

// redactedError is an error whose text hides secrets; errors.Is and As see the error it
// wraps.
type redactedError struct {
	err     error
	secrets []string
}

func (e *redactedError) Error() string { return hideSecrets(e.err.Error(), e.secrets) }

func (e *redactedError) Unwrap() error { return e.err }

// hideSecrets is s with every secret replaced by ***, the longest first so that a secret
// inside another does not leave the rest of the longer one.
func hideSecrets(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, "***")
	}
	return s
}

// urlSecrets returns the secrets of the Redis URL raw as they can appear in a message:
// as written, percent-decoded, and quoted as %q quotes them. It does not need raw to
// parse: the user info is what comes before the last '@' (after the scheme and any
// slashes), its secret what follows its first ':' (all of it when there is no ':', as
// redis://secret@host means a password alone).
func urlSecrets(raw string) []string {
	var found []string
	if at := strings.LastIndexByte(raw, '@'); at >= 0 {
		info := raw[:at]
		if i := strings.Index(info, "://"); i >= 0 {
			info = info[i+3:]
		} else if scheme, rest, ok := strings.Cut(info, ":"); ok && isRedisScheme(scheme) {
			info = rest // redis:user:pw@host, a scheme that lost its slashes
		}
		info = strings.TrimLeft(info, "/")
		if i := strings.LastIndexByte(info, '/'); i >= 0 {
			info = info[i+1:] // redis:///user:pw@host: the user info went into the path
		}
		if _, pw, ok := strings.Cut(info, ":"); ok {
			info = pw
		}
		found = append(found, info)
	}
	if _, query, ok := strings.Cut(raw, "?"); ok {
		for _, kv := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			if k == "password" || k == "sentinel_password" {
				found = append(found, v)
			}
		}
	}
	var out []string
	for _, s := range found {
		if s == "" {
			continue
		}
		out = append(out, s, strings.Trim(strconv.Quote(s), `"`))
		if d, err := url.PathUnescape(s); err == nil {
			out = append(out, d, strings.Trim(strconv.Quote(d), `"`))
		}
		if d, err := url.QueryUnescape(s); err == nil {
			out = append(out, d)
		}
	}
	// Longest first, so a secret inside another is not replaced before it.
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

func isRedisScheme(s string) bool {
	switch s {
	case "redis", "rediss", "redis+cluster", "rediss+cluster":
		return true
	}
	return false
}

// redactURL is the Redis URL raw for messages: its user info shown as *** and the values
// of its password options hidden.
func redactURL(raw string) string {
	at := strings.LastIndex(raw, "@")
	scheme := strings.Index(raw, "://")
	if at >= 0 && scheme >= 0 && at > scheme {
		raw = raw[:scheme+3] + "***" + raw[at:]
	}
	if q := strings.IndexByte(raw, '?'); q >= 0 {
		raw = raw[:q] + hideSecrets(raw[q:], urlSecrets(raw[q:]))
	}
	return raw
}
