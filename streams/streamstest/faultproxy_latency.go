package streamstest

import (
	"math/rand/v2"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// latencyToxic is the type name of preciseLatency among toxiproxy's toxics.
const latencyToxic = "streamstest_latency"

func init() { toxics.Register(latencyToxic, new(preciseLatency)) }

// preciseLatency is toxiproxy's latency toxic counted in microseconds and waited out on
// a precise clock. toxiproxy's own counts whole milliseconds and waits on Go timers,
// which a process with nothing else to do fires a millisecond late at worst (a 1 ms
// wait takes about 1.09 ms, a 1.5 ms one 2.2 ms): too coarse for the 0.2-2 ms round
// trips between machines that a FaultProxy stands for.
type preciseLatency struct {
	LatencyUS int64 `json:"latency_us"`
	JitterUS  int64 `json:"jitter_us"` // up to this much more or less
}

// GetBufferSize is toxiproxy's latency toxic's: chunks queue here, not in the reader.
func (t *preciseLatency) GetBufferSize() int { return 1024 }

func (t *preciseLatency) delay() time.Duration {
	us := t.LatencyUS
	if t.JitterUS > 0 {
		us += rand.Int64N(2*t.JitterUS) - t.JitterUS
	}
	return time.Duration(us) * time.Microsecond
}

// Pipe holds each chunk until its arrival plus the delay, as toxiproxy's latency toxic
// does: chunks that arrive together leave together, so a pipeline pays the delay once.
func (t *preciseLatency) Pipe(stub *toxics.ToxicStub) {
	clock := newPreciseClock()
	defer clock.close()
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			wait := t.delay() - time.Since(c.Timestamp)
			if !clock.waitUnless(wait, stub.Interrupt) {
				stub.Output <- c // interrupted: pass it on undelayed, drop nothing
				return
			}
			c.Timestamp = c.Timestamp.Add(wait)
			stub.Output <- c
		}
	}
}

// waitUnless waits d and returns true, or returns false as soon as interrupt has a value
// (it looks every millisecond: the toxic's replacement waits no longer than that).
func (c *preciseClock) waitUnless(d time.Duration, interrupt <-chan struct{}) bool {
	until := time.Now().Add(d)
	for {
		select {
		case <-interrupt:
			return false
		default:
		}
		left := time.Until(until)
		if left <= 0 {
			return true
		}
		c.sleep(min(left, time.Millisecond))
	}
}
