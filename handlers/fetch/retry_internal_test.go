package fetch

import (
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"  ", 0, false},
		{"0", 0, true},
		{"120", 2 * time.Minute, true},
		{" 7 ", 7 * time.Second, true},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},      // a date past: retry now
		{"Tuesday, 24-Nov-26 09:00:30 GMT", 30 * time.Second, true}, // RFC 850, which HTTP accepts
		{"Tue Nov 24 09:01:00 2026", time.Minute, true},             // ANSI C asctime
		{"2026-11-24T09:01:00Z", 0, false},                          // not an HTTP date
	} {
		got, ok := parseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryDelay(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	// The server's Retry-After wins, capped at maxRetryDelay.
	if d := retryDelay(time.Second, 1, "30", now); d != 30*time.Second {
		t.Errorf("Retry-After 30: %v, want 30s", d)
	}
	if d := retryDelay(time.Second, 1, "86400", now); d != maxRetryDelay {
		t.Errorf("Retry-After a day: %v, want the cap %v", d, maxRetryDelay)
	}
	// Without one: base doubled per retry, ±50%, never past the cap.
	for _, tc := range []struct {
		n      int
		lo, hi time.Duration
	}{
		{1, 500 * time.Millisecond, 1500 * time.Millisecond},
		{2, time.Second, 3 * time.Second},
		{3, 2 * time.Second, 6 * time.Second},
		{30, maxRetryDelay / 2, maxRetryDelay},
	} {
		for range 100 {
			if d := retryDelay(time.Second, tc.n, "garbage", now); d < tc.lo || d > tc.hi {
				t.Fatalf("retry %d: %v, want in [%v, %v]", tc.n, d, tc.lo, tc.hi)
			}
		}
	}
}

func TestRetryableStatus(t *testing.T) {
	for code, want := range map[int]bool{200: false, 404: false, 403: false, 408: true, 429: true, 500: true, 503: true} {
		if got := retryableStatus(code); got != want {
			t.Errorf("retryableStatus(%d) = %v, want %v", code, got, want)
		}
	}
}
