package spiders

import (
	"fmt"
	"regexp"
	"time"
)

// RevisitRule schedules the URLs matching a pattern for revisits on an adaptive
// interval (StormCrawler's adaptive scheduler): the first revisit comes Start after the
// first fetch, the interval halves each time the page changed (a 200 with another
// content digest) and doubles each time it did not (a 304, or the same digest), never
// below Min nor above Max. In YAML, under settings:
//
//	revisit:
//	  - match: '/(news|feed)'
//	    min: 10m
//	    max: 14d   # durations take d (24 hours) besides Go's units
//	    start: 1h
type RevisitRule struct {
	// Match is a regular expression a URL must match (unanchored); empty matches every
	// URL.
	Match string `yaml:"match"`
	// Min is the shortest interval. Required, at least a minute (the schedule's
	// resolution).
	Min time.Duration `yaml:"min"`
	// Max is the longest interval. Required, at least Min.
	Max time.Duration `yaml:"max"`
	// Start is the first interval. Default Min; clamped into [Min, Max].
	Start time.Duration `yaml:"start"`

	re *regexp.Regexp
}

// RevisitResolution is the revisit schedule's resolution: a revisit is due in the
// minute its time falls in.
const RevisitResolution = time.Minute

// Compile checks the rule and compiles its pattern; Next and Matches need it.
func (r *RevisitRule) Compile() error {
	if r.Min < RevisitResolution {
		return fmt.Errorf("spiders: revisit %q: min %v is below %v", r.Match, r.Min, RevisitResolution)
	}
	if r.Max < r.Min {
		return fmt.Errorf("spiders: revisit %q: max %v is below min %v", r.Match, r.Max, r.Min)
	}
	if r.Start == 0 {
		r.Start = r.Min
	}
	r.Start = r.clamp(r.Start)
	re, err := regexp.Compile(r.Match)
	if err != nil {
		return fmt.Errorf("spiders: revisit %q: %w", r.Match, err)
	}
	r.re = re
	return nil
}

// Matches reports whether the rule applies to rawURL.
func (r *RevisitRule) Matches(rawURL string) bool { return r.re == nil || r.re.MatchString(rawURL) }

// Next returns the interval after a revisit that found the page changed or not, given
// the interval that led to it (0: the first fetch, which gives Start).
func (r *RevisitRule) Next(cur time.Duration, changed bool) time.Duration {
	switch {
	case cur <= 0:
		return r.Start
	case changed:
		return r.clamp(cur / 2)
	default:
		return r.clamp(cur * 2)
	}
}

func (r *RevisitRule) clamp(d time.Duration) time.Duration { return min(max(d, r.Min), r.Max) }

// RevisitFor returns the first rule of rules that matches rawURL, or nil.
func RevisitFor(rules []RevisitRule, rawURL string) *RevisitRule {
	for i := range rules {
		if rules[i].Matches(rawURL) {
			return &rules[i]
		}
	}
	return nil
}
