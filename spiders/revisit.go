package spiders

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// RevisitSettings are the knobs that fetch URLs again (Settings.Revisit; see "Revisits"
// in the package doc for where each is carried out). In YAML, under settings:
//
//	revisit:
//	  rules:                      # the adaptive schedule
//	    - {match: '/news/', min: 10m, max: 1d, start: 1h}
//	  after: 24h                  # a URL queued this long ago may be queued again
//	  forget_after: 30d           # the seen set forgets a URL first seen this long ago
//	  volatile: [views, fetched]  # item fields that make no version and no change
//
// The keys of before, settings.revisit as a list (rules), settings.revisit_after
// (after) and settings.dedup_expire_after (forget_after), still load, each with a
// warning (Spider.Warnings); a knob written both ways is an error.
type RevisitSettings struct {
	// Rules schedules the URLs its rules match for revisits on an adaptive interval
	// (see RevisitRule; the first matching rule applies). Empty: no revisits.
	Rules []RevisitRule `yaml:"rules"`
	// After lets a URL be fetched again once it was queued this long ago (for crawls
	// that run every day: seed again and changed pages come back). 0: never.
	After time.Duration `yaml:"after"`
	// ForgetAfter lets a URL without a revisit rule be queued again once the crawl
	// first saw it this long ago: between ForgetAfter and 1.25 times it later (the seen
	// set is kept in 4 generations, the oldest dropped whole), in exact and bloom mode
	// (Settings.Dedup). At least a minute; 0 (the default): a URL is seen for the
	// crawl's life. Not with After, which keeps a time per URL instead. A crawl keeps
	// the dedup it started with.
	ForgetAfter time.Duration `yaml:"forget_after"`
	// Volatile names item fields whose values change on every fetch (a view counter,
	// a time of rendering): a new value of one makes no new item version (it goes out
	// with the next version that has another change) and does not count as a change
	// of the page for the adaptive schedule. Any item type's field of that name.
	Volatile []string `yaml:"volatile"`
}

// IsVolatile reports whether name is one of Volatile.
func (r *RevisitSettings) IsVolatile(name string) bool { return slices.Contains(r.Volatile, name) }

// Fetches reports whether the crawl fetches pages again by their URL's schedule or age
// (Rules or After): where an item's values can change.
func (r *RevisitSettings) Fetches() bool { return len(r.Rules) > 0 || r.After > 0 }

// validate compiles the rules and checks the knobs on their own and against dedup (the
// settings' Dedup).
func (r *RevisitSettings) validate(dedup string) error {
	for i := range r.Rules {
		if err := r.Rules[i].Compile(); err != nil {
			return err
		}
	}
	switch {
	case r.ForgetAfter < 0 || r.ForgetAfter > 0 && r.ForgetAfter < time.Minute:
		return fmt.Errorf("spiders: settings.revisit.forget_after (formerly dedup_expire_after) %s: want 0 (never) or at least 1m", r.ForgetAfter)
	case r.ForgetAfter > 0 && dedup == "set":
		return fmt.Errorf("spiders: settings.revisit.forget_after (formerly dedup_expire_after) needs dedup exact or bloom, not set")
	case r.ForgetAfter > 0 && r.After > 0:
		return fmt.Errorf("spiders: settings.revisit.forget_after (formerly dedup_expire_after) and settings.revisit.after both let URLs through again: set one " +
			"(after keeps a time per URL and sends the stored validators; forget_after keeps the dedup's bytes per URL)")
	}
	return nil
}

// RevisitRule schedules the URLs matching a pattern for revisits on an adaptive
// interval (StormCrawler's adaptive scheduler): the first revisit comes Start after the
// first fetch, the interval halves each time the page changed (a 200 whose items or
// links differ from the last fetch's) and doubles each time it did not (a 304, or the
// same items and links), never below Min nor above Max. A page that answers anything
// else (a 4xx, a 5xx past its retries, a redirect) is gone: it is fetched again every
// Max, GoneChecks times, and is back at Start once it answers 200. In YAML, under
// settings:
//
//	revisit:
//	  rules:
//	    - match: '/(news|feed)'
//	      min: 10m
//	      max: 14d   # durations take d (24 hours) besides Go's units
//	      start: 1h
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
	// GoneChecks is how many times a gone page (one that answered a 4xx, a 5xx past its
	// retries, a redirect, ...) is fetched again, Max apart, before its revisits end.
	// Default 10 (DefaultGoneChecks); -1: until it comes back.
	GoneChecks int `yaml:"gone_checks"`

	re *regexp.Regexp
}

// RevisitResolution is the revisit schedule's resolution: a revisit is due in the
// minute its time falls in.
const RevisitResolution = time.Minute

// DefaultGoneChecks is RevisitRule.GoneChecks's default: with max 1d, a page gone for
// ten days is given up.
const DefaultGoneChecks = 10

// Compile checks the rule and compiles its pattern; Next and Matches need it.
func (r *RevisitRule) Compile() error {
	if r.GoneChecks < -1 {
		return fmt.Errorf("spiders: revisit %q: gone_checks %d: want a count, or -1 (until the page comes back)", r.Match, r.GoneChecks)
	}
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

// Gone returns whether a page that answered badly gone times in a row (this one
// included) is still fetched again: GoneChecks times.
func (r *RevisitRule) Gone(gone int) bool {
	checks := r.GoneChecks
	if checks == 0 {
		checks = DefaultGoneChecks
	}
	return checks < 0 || gone <= checks
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
