// Package newssite is a test news site whose pages change on their own schedules
// (some every minute, some hourly, some never) on a clock the caller controls, so a
// test simulates a day of revisits without waiting a day.
//
// A Site answers, for a page and a time, which version the page is at (Version) and
// when each change happened (ChangedAt), the ground truth a revisit simulation scores
// its fetches against: changes caught, the delay from a change to the first fetch that
// sees it (staleness). Version 0 is the page as it is at the site's start.
package newssite
