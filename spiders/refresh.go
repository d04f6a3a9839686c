package spiders

import (
	"strconv"
	"strings"
)

// MaxRefreshDelay is the longest delay of a <meta http-equiv="refresh"> that is followed
// (Scrapy's METAREFRESH_MAXDELAY): a page that reloads itself every few minutes is
// showing live content, not sending the reader elsewhere.
const MaxRefreshDelay = 100

// MetaRefresh returns where the page's first <meta http-equiv="refresh"
// content="N; url=..."> sends a browser, resolved against the page (as Resolve does),
// and whether it has one: a refresh without a URL (a reload), with a delay over
// MaxRefreshDelay seconds or with a URL that does not resolve is none. The parse stage
// follows it as a redirect of the page.
func (r *Response) MetaRefresh() (string, bool) {
	if !r.IsHTML() {
		return "", false
	}
	t, ok := r.tags()
	if !ok {
		return "", false
	}
	for _, n := range t.metas {
		if v, _ := attr(n, "http-equiv"); !strings.EqualFold(strings.TrimSpace(v), "refresh") {
			continue
		}
		content, _ := attr(n, "content")
		delay, target, ok := parseRefresh(content)
		if !ok || delay > MaxRefreshDelay {
			return "", false
		}
		abs, err := r.Resolve(cleanHref(target))
		if err != nil {
			return "", false
		}
		return abs, true
	}
	return "", false
}

// parseRefresh reads a refresh's content as the HTML standard's declarative refresh
// does: a delay in seconds, then ';' or ',', then "url=" (optional), then the URL,
// quoted or not. ok is false without a URL.
func parseRefresh(content string) (delay float64, target string, ok bool) {
	s := strings.TrimSpace(content)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i == 0 {
		return 0, "", false
	}
	delay, err := strconv.ParseFloat(strings.TrimRight(s[:i], "."), 64)
	if err != nil {
		return 0, "", false
	}
	s = strings.TrimSpace(s[i:])
	if s == "" || s[0] != ';' && s[0] != ',' {
		return delay, "", false
	}
	s = strings.TrimSpace(s[1:])
	if len(s) >= 3 && strings.EqualFold(s[:3], "url") {
		rest := strings.TrimSpace(s[3:])
		if strings.HasPrefix(rest, "=") {
			s = strings.TrimSpace(rest[1:])
		}
	}
	if len(s) > 0 && (s[0] == '\'' || s[0] == '"') {
		q := s[0]
		s = s[1:]
		if j := strings.IndexByte(s, q); j >= 0 {
			s = s[:j]
		}
	}
	s = strings.TrimSpace(s)
	return delay, s, s != ""
}
