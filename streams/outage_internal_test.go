package streams

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// An outage ends with a write that goes through, or, when none is seen, outageStale
// after its last refusal (so a stage whose held work failed for another reason never
// stops reading for good); a refusal after that starts a new outage.
func TestOutageEndsWhenAcceptedOrStale(t *testing.T) {
	var mu sync.Mutex
	clock := time.Unix(1000, 0)
	o := &Outage{}
	o.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	oom := errors.New("OOM command not allowed when used memory > 'maxmemory'.")

	if o.refused(errors.New("WRONGTYPE Operation against a key")) || o.Active() {
		t.Fatal("a wrong-type error started an outage")
	}
	if !o.refused(oom) || !o.Active() {
		t.Fatal("OOM did not start an outage")
	}
	ended := o.ended()
	o.accepted()
	select {
	case <-ended:
	default:
		t.Fatal("Accepted did not end the outage")
	}
	if o.Active() {
		t.Fatal("active after Accepted")
	}

	o.refused(oom)
	advance(outageStale - time.Second)
	if !o.Active() {
		t.Fatal("outage over before it went stale")
	}
	advance(2 * time.Second)
	if o.Active() {
		t.Fatal("outage still active after outageStale without a refusal")
	}
	first := o.ended()
	o.refused(oom) // a new outage
	select {
	case <-first:
	default:
		t.Fatal("the stale outage's waiters were not released")
	}
	if !o.Active() {
		t.Fatal("a refusal after a stale outage did not start a new one")
	}
	var nilOutage *Outage
	if nilOutage.Active() || !nilOutage.refused(oom) {
		t.Fatal("a nil Outage must track nothing and still classify")
	}
	nilOutage.accepted()
}
