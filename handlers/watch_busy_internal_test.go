package handlers

import (
	"testing"
	"time"
)

// A watcher whose process is working reads the progress once per busyReadEvery; once
// the process stands still it reads at every look, so done is seen at the next look.
func TestBusyGateReadsRarelyWhileWorkingAndAtOnceWhenIdle(t *testing.T) {
	var activity int64
	g := busyGate{activity: func() int64 { return activity }}
	now := time.Unix(1000, 0)
	look := func() bool { now = now.Add(250 * time.Millisecond); return !g.skip(now) }

	if !look() {
		t.Fatal("the first look did not read")
	}
	reads := 0
	for range 40 { // 10 s of looks every 250 ms while the process works
		activity++
		if look() {
			reads++
		}
	}
	if want := int(10 * time.Second / busyReadEvery); reads != want {
		t.Fatalf("%d reads in 10 s of work, want %d (one per %s)", reads, want, busyReadEvery)
	}
	activity++ // the last page
	look()     // may be skipped: it moved
	for i := range 4 {
		if !look() {
			t.Fatalf("look %d after the process stood still skipped the read", i+1)
		}
	}
	if (&busyGate{}).skip(now) {
		t.Fatal("a gate without an activity source skipped a read")
	}
}
