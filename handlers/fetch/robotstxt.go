package fetch

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// robotsRules are the rules of a robots.txt for one product token, read as RFC 9309
// reads it: line by line, every line that parses counts and any other is skipped (a
// rule before the first user-agent line, a Crawl-delay that is no number, a line
// without a colon do not void the file); the groups naming the crawler's product token
// (case-insensitively) are combined, else the "*" groups, else nothing is disallowed.
// Paths are compared after percent-encoding normalisation (§2.2.2), "*" matches any
// run of characters and a final "$" anchors the end of the path (§2.2.3); the longest
// matching rule wins and Allow wins a tie (§2.2.2).
type robotsRules struct {
	rules []robotsRule
	// delay is the group's Crawl-delay (not in RFC 9309, obeyed by most crawlers); 0:
	// none. capped is set when it was longer than the most allowed and cut to it.
	delay  time.Duration
	capped bool
}

// robotsRule is one Allow or Disallow line, its path normalised (normRobotsPattern).
type robotsRule struct {
	pattern string
	allow   bool
}

// robotsGroup is one group of a robots.txt as it is read: its user agents' product
// tokens (lower case, "*" for any) and its rules.
type robotsGroup struct {
	agents []string
	rules  []robotsRule
	delay  string // the first Crawl-delay line's value; "" when none
}

// parseRobots reads body for the crawler whose product token is token (lower case, see
// productToken); a Crawl-delay above maxDelay is cut to it (0: no cap).
func parseRobots(body []byte, token string, maxDelay time.Duration) *robotsRules {
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	var groups []*robotsGroup
	var cur *robotsGroup
	inRules := false // a rule line was read since the group's user-agent lines
	for len(body) > 0 {
		var line []byte
		if i := bytes.IndexAny(body, "\r\n"); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			line, body = body, nil
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		k := strings.ToLower(string(bytes.TrimSpace(key)))
		v := string(bytes.TrimSpace(value))
		switch k {
		case "user-agent":
			if cur == nil || inRules {
				cur = &robotsGroup{}
				groups = append(groups, cur)
				inRules = false
			}
			cur.agents = append(cur.agents, agentToken(v))
		case "allow", "disallow":
			if cur == nil {
				continue // a rule outside any group: skipped, the rest still counts
			}
			inRules = true
			if v == "" {
				continue // "Disallow:" with no path disallows nothing
			}
			cur.rules = append(cur.rules, robotsRule{pattern: normRobotsPattern(v), allow: k == "allow"})
		case "crawl-delay":
			if cur == nil {
				continue
			}
			inRules = true
			if cur.delay == "" {
				cur.delay = v
			}
		}
	}
	out := &robotsRules{}
	for _, want := range []string{token, "*"} {
		found := false
		for _, g := range groups {
			for _, a := range g.agents {
				if a == want {
					found = true
					out.rules = append(out.rules, g.rules...)
					if out.delay == 0 && !out.capped {
						out.delay, out.capped = crawlDelay(g.delay, maxDelay)
					}
					break
				}
			}
		}
		if found {
			break
		}
	}
	return out
}

// crawlDelay reads a Crawl-delay value in seconds (fractions allowed): what is no
// number, negative or not finite is none; a delay above maxDelay (when > 0) is cut to it
// and reported as capped.
func crawlDelay(v string, maxDelay time.Duration) (d time.Duration, capped bool) {
	if v == "" {
		return 0, false
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) || secs <= 0 {
		return 0, false
	}
	if maxDelay > 0 && secs > maxDelay.Seconds() {
		return maxDelay, true
	}
	if secs > float64(math.MaxInt64/int64(time.Second)) { // no cap: as long as a Duration goes
		return time.Duration(math.MaxInt64), false
	}
	return time.Duration(secs * float64(time.Second)), false
}

// productToken is the product token of a user agent, lower case: its first run of
// letters, '_' and '-' ("streamcrawl" for "streamcrawl/1.0 (+https://...)"), what a
// robots.txt names a crawler by (RFC 9309 §2.2.1).
func productToken(userAgent string) string {
	return agentToken(userAgent)
}

// agentToken is the product token a user-agent line names, lower case ("*" for any).
func agentToken(v string) string {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "*") {
		return "*"
	}
	end := 0
	for end < len(v) {
		c := v[end]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-') {
			break
		}
		end++
	}
	return strings.ToLower(v[:end])
}

// allowed reports whether the rules allow the URL path (with its query; escaped, as
// url.URL.EscapedPath writes it): the longest matching rule decides, Allow on a tie;
// no matching rule allows.
func (r *robotsRules) allowed(pathQuery string) bool {
	if r == nil || len(r.rules) == 0 {
		return true
	}
	path := normRobotsPath(pathQuery)
	best, allow := -1, true
	for _, rule := range r.rules {
		n := len(rule.pattern)
		if n < best || n == best && allow {
			continue
		}
		if matchRobots(rule.pattern, path) {
			best, allow = n, rule.allow
		}
	}
	return allow
}

// matchRobots reports whether the path starts with what pattern matches: '*' is any
// run of characters, a final '$' the end of the path.
func matchRobots(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	if !strings.Contains(pattern, "*") {
		if anchored {
			return path == pattern
		}
		return strings.HasPrefix(path, pattern)
	}
	pieces := strings.Split(pattern, "*")
	if !strings.HasPrefix(path, pieces[0]) {
		return false
	}
	pos := len(pieces[0])
	last := len(pieces) - 1
	for _, p := range pieces[1:last] {
		i := strings.Index(path[pos:], p)
		if i < 0 {
			return false
		}
		pos += i + len(p)
	}
	if anchored {
		return len(path)-len(pieces[last]) >= pos && strings.HasSuffix(path, pieces[last])
	}
	return strings.Contains(path[pos:], pieces[last])
}

// normRobotsPattern normalises an Allow or Disallow path (normRobots); its '*' stay
// wildcards and a final '$' the anchor, any other '$' is the character itself (%24).
func normRobotsPattern(p string) string {
	anchored := strings.HasSuffix(p, "$")
	if anchored {
		p = p[:len(p)-1]
	}
	p = strings.ReplaceAll(normRobots(p), "$", "%24")
	if anchored {
		p += "$"
	}
	return p
}

// normRobotsPath normalises a URL's path and query (normRobots); its '*' and '$' are
// characters, written %2A and %24 as a pattern matching them literally must write them.
func normRobotsPath(p string) string {
	p = normRobots(p)
	if strings.ContainsAny(p, "*$") {
		p = strings.NewReplacer("*", "%2A", "$", "%24").Replace(p)
	}
	return p
}

// normRobots writes a path in the one form RFC 9309 §2.2.2 compares: octets outside
// US-ASCII (UTF-8 as written in the file), controls, space and the characters a URL
// never carries raw percent-encoded; an escaped unreserved character (%7E, %41)
// decoded; the other escapes in upper-case hex; a '%' that starts no escape written %25.
func normRobots(p string) string {
	return spiders.NormalizeEscapes(p, func(c byte) bool { return !robotsEscaped(c) })
}

// robotsEscaped reports the octets a path never carries raw.
func robotsEscaped(c byte) bool {
	return c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0
}
