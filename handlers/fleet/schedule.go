package fleet

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// ParseSchedule parses a crawl's schedule: a standard cron line of five fields (minute,
// hour, day of month, month, day of week: "0 3 * * *" runs at 03:00 every day), a
// descriptor (@hourly, @daily, @weekly, @monthly) or @every DURATION, in UTC unless the
// line starts with CRON_TZ=Zone.
func ParseSchedule(spec string) (cron.Schedule, error) {
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w (want five cron fields, as \"0 3 * * *\", or @daily, @every 6h)", spec, err)
	}
	return s, nil
}

// maxTickSteps bounds the walk over a schedule's ticks in LatestTick.
const maxTickSteps = 100_000

// LatestTick returns the latest tick of s in (after, now], or the zero time when there
// is none: the tick a run is due for. A fleet that was down over many ticks starts one
// run, for the latest.
func LatestTick(s cron.Schedule, after, now time.Time) time.Time {
	var latest time.Time
	t := after.UTC()
	for range maxTickSteps {
		next := s.Next(t)
		if next.IsZero() || next.After(now) {
			return latest
		}
		latest, t = next, next
	}
	return latest
}
