package streamstest

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// preciseClock waits on a timerfd read through the runtime's poller: the kernel wakes
// the reader within some tens of microseconds of the deadline, where a Go timer in an
// idle process rounds a sub-millisecond wait up to a millisecond. It falls back to
// time.Sleep when the timerfd cannot be had.
type preciseClock struct {
	fd  int
	f   *os.File // fd, non-blocking, so that a read parks the goroutine, not a thread
	buf [8]byte
}

func newPreciseClock() *preciseClock {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return &preciseClock{fd: -1}
	}
	return &preciseClock{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
}

// sleep waits d.
func (c *preciseClock) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	if c.f != nil {
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
		if unix.TimerfdSettime(c.fd, 0, &spec, nil) == nil {
			if _, err := c.f.Read(c.buf[:]); err == nil {
				return
			}
		}
	}
	time.Sleep(d)
}

func (c *preciseClock) close() {
	if c.f != nil {
		_ = c.f.Close()
	}
}
