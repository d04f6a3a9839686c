package cli

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestGCDefaultsLeaveTheUsersSettings: a process with neither GOGC nor GOMEMLIMIT set runs
// the collector off under defaultMemoryLimit and watches its heap; GOMEMLIMIT alone keeps
// the user's limit with the collector at 50%; GOGC set changes nothing. (The collector's
// settings are the process's own: this test is not parallel and puts them back.)
func TestGCDefaultsLeaveTheUsersSettings(t *testing.T) {
	keepGC(t)
	const userLimit = 300 << 20
	for _, tc := range []struct {
		name        string
		env         map[string]string
		watch       bool
		percent     int
		limit       int64
		userPercent int // the setting before (what the runtime took from GOGC)
	}{
		{"neither", nil, true, -1, defaultMemoryLimit, 100},
		{"GOMEMLIMIT", map[string]string{"GOMEMLIMIT": "300MiB"}, false, gcPercentDefault, userLimit, 100},
		{"GOGC", map[string]string{"GOGC": "150"}, false, 150, math.MaxInt64, 150},
		{"GOGC off", map[string]string{"GOGC": "off", "GOMEMLIMIT": "300MiB"}, false, -1, userLimit, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// What the runtime set from the environment before main.
			debug.SetGCPercent(tc.userPercent)
			if tc.env["GOMEMLIMIT"] != "" {
				debug.SetMemoryLimit(userLimit)
			} else {
				debug.SetMemoryLimit(math.MaxInt64)
			}
			watch := setGCDefaults(func(k string) string { return tc.env[k] })
			percent, limit := readGC()
			if watch != tc.watch || percent != tc.percent || limit != tc.limit {
				t.Errorf("watch %v, GOGC %d, limit %d; want %v, %d, %d", watch, percent, limit, tc.watch, tc.percent, tc.limit)
			}
		})
	}
}

// TestGCModeFallsBackForALargeHeap: the limit holds while the live heap leaves it more
// room than GOGC=50 would; past 55% of the limit the process falls back to GOGC=50 with no
// limit, and comes back below 40% (not at 50%: no switching back and forth at the edge).
func TestGCModeFallsBackForALargeHeap(t *testing.T) {
	keepGC(t)
	const mib = 1 << 20
	limited := true
	for i, step := range []struct {
		live uint64
		want bool
	}{
		{12 * mib, true}, {19 * mib, true}, {20 * mib, false}, {18 * mib, false},
		{15 * mib, false}, {14 * mib, true}, {150 * mib, false}, {1 * mib, true},
	} {
		next := nextGCMode(limited, step.live)
		if next != step.want {
			t.Fatalf("step %d: live %d MiB, limited %v: next %v, want %v", i, step.live/mib, limited, next, step.want)
		}
		if next != limited {
			setGCMode(next)
			percent, limit := readGC()
			wantPercent, wantLimit := gcPercentDefault, int64(math.MaxInt64)
			if next {
				wantPercent, wantLimit = -1, defaultMemoryLimit
			}
			if percent != wantPercent || limit != wantLimit {
				t.Fatalf("step %d: GOGC %d, limit %d; want %d, %d", i, percent, limit, wantPercent, wantLimit)
			}
		}
		limited = next
	}
}

// readGC returns the collector's settings without changing them.
func readGC() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// keepGC sets the collector to Go's defaults for a test and puts the process's own
// settings back when it ends (they are the process's: such a test is not parallel).
func keepGC(t *testing.T) {
	percent0 := debug.SetGCPercent(100)
	limit0 := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(percent0)
		debug.SetMemoryLimit(limit0)
	})
}
