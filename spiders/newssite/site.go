package newssite

import (
	"fmt"
	"time"
)

// Page is one page of the site.
type Page struct {
	// Path is the page's path ("/live/0").
	Path string
	// Every is how often the page changes; 0: never.
	Every time.Duration
}

// Site is a set of pages that change from Start on.
type Site struct {
	// Start is when every page is at version 0.
	Start time.Time
	// Pages are the site's pages.
	Pages []Page
}

// New returns a site starting at start with live pages changing every minute, hourly
// pages changing every hour and still pages that never change, in that order.
func New(start time.Time, live, hourly, still int) *Site {
	s := &Site{Start: start}
	add := func(n int, kind string, every time.Duration) {
		for i := range n {
			s.Pages = append(s.Pages, Page{Path: fmt.Sprintf("/%s/%d", kind, i), Every: every})
		}
	}
	add(live, "live", time.Minute)
	add(hourly, "hourly", time.Hour)
	add(still, "still", 0)
	return s
}

// Version returns the version page p is at, at time t: the number of changes since
// the site's start.
func (s *Site) Version(p Page, t time.Time) int64 {
	if p.Every <= 0 || t.Before(s.Start) {
		return 0
	}
	return int64(t.Sub(s.Start) / p.Every)
}

// ChangedAt returns when page p reached version v (v ≥ 1; version 0 is the start).
func (s *Site) ChangedAt(p Page, v int64) time.Time {
	if v <= 0 || p.Every <= 0 {
		return s.Start
	}
	return s.Start.Add(time.Duration(v) * p.Every)
}
