package streams

import (
	"errors"
	"fmt"
	"net/url"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
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

// A site's network error is not a Redis outage: a fetch that failed for good (poison,
// wrapping the HTTP client's *url.Error) goes to the dead letters, and a bare HTTP
// client error is no outage either. Before, both held the request as an outage and it
// was handed out again forever (a server sending two Content-Lengths asked 20 times).
func TestSiteNetworkErrorsAreNoOutage(t *testing.T) {
	reset := &url.Error{Op: "Get", URL: "http://127.0.0.1:1/x", Err: syscall.ECONNRESET}
	if isWriteRefused(reset) {
		t.Error("an HTTP client's connection reset counted as Redis unreachable")
	}
	if !isWriteRefused(fmt.Errorf("frontier: emit: %w", syscall.ECONNRESET)) {
		t.Error("a Redis connection reset is no longer an outage")
	}
	o := &Outage{}
	msg := message.NewMessage("1", nil)
	if Fail(msg, fmt.Errorf("%w: fetch: %w", ErrPoison, reset), o) || msg.Metadata.Get(metaPoison) != "1" || msg.Metadata.Get(metaOutage) != "" || o.Active() {
		t.Errorf("a fetch that failed for good: metadata %v, outage %v; want poison", msg.Metadata, o.Active())
	}
}
