//go:build !linux

package streamstest

import "time"

// preciseClock is time.Sleep where there is no timerfd (its waits under a millisecond
// may take a millisecond).
type preciseClock struct{}

func newPreciseClock() *preciseClock { return &preciseClock{} }

func (*preciseClock) sleep(d time.Duration) { time.Sleep(d) }

func (*preciseClock) close() {}
