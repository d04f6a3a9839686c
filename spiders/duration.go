package spiders

import (
	"errors"
	"math"
	"strconv"
	"time"
)

// day is the d unit of parseDuration: 24 hours (a calendar day's daylight-saving
// changes are not a crawler's concern).
const day = 24 * time.Hour

// parseDuration reads a duration of a YAML spider: what time.ParseDuration reads ("30s",
// "1h30m", "200ms"), and days besides, "d" being 24 hours, alone or with the other units
// ("14d", "1d12h", "1.5d").
func parseDuration(s string) (time.Duration, error) {
	rest := s
	neg := false
	if rest != "" && (rest[0] == '-' || rest[0] == '+') {
		neg, rest = rest[0] == '-', rest[1:]
	}
	if rest == "0" {
		return 0, nil
	}
	if rest == "" {
		return 0, errors.New("empty duration")
	}
	var total time.Duration
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] == '.' || '0' <= rest[i] && rest[i] <= '9') {
			i++
		}
		j := i
		for j < len(rest) && rest[j] != '.' && (rest[j] < '0' || rest[j] > '9') {
			j++
		}
		num, unit := rest[:i], rest[i:j]
		rest = rest[j:]
		var d time.Duration
		if unit == "d" {
			f, err := strconv.ParseFloat(num, 64)
			if num == "" || err != nil {
				return 0, errors.New("a number must come before d")
			}
			if f*float64(day) >= math.MaxInt64 {
				return 0, errors.New("duration out of range")
			}
			d = time.Duration(math.Round(f * float64(day)))
		} else {
			var err error
			if d, err = time.ParseDuration(num + unit); err != nil {
				return 0, err
			}
		}
		if total += d; total < 0 {
			return 0, errors.New("duration out of range")
		}
	}
	if neg {
		total = -total
	}
	return total, nil
}
