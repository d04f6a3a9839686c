package fetch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
)

// A request leaves for its host only while its fetcher holds two things: the requests
// stream entry (streams.Held: another fetcher takes it over only after min-idle) and,
// for a host with a concurrency limit, the slot leased for it (frontier.Leased: the
// lease ends its TTL after the request was handed out, or when its slot is given back).
// A fetcher that slept past either (SIGSTOP, a long GC pause, a VM migration, a
// partition from Redis) wakes holding a request whose slot may be someone else's: it
// checks both right before the request leaves (beforeSend), after every wait (robots.txt,
// a proxy slot, a browser tab), and sends nothing it no longer holds. Between that check
// and the bytes on the wire there is no wait, only the instructions that write them: a
// site cannot check a token, so that gap is the fence's only one.
//
// The cost: nothing in Redis for a request sent within a third of its lease's TTL of
// its hand-out and within its entry's window (streams.Held): every request of a healthy
// crawl. Others ask Redis once before they leave.

// errSlotLost is beforeSend's answer for a request whose host slot was handed on: it
// goes back to its host's queue, unsent.
var errSlotLost = errors.New("fetch: the request's host slot was handed on")

// sendCheckKey is the context key of a fetch's beforeSend.
type sendCheckKey struct{}

// withSendCheck returns ctx carrying check, which every way of sending a request asks
// right before the request leaves (beforeSend).
func withSendCheck(ctx context.Context, check func(context.Context) error) context.Context {
	return context.WithValue(ctx, sendCheckKey{}, check)
}

// errSendUnconfirmed wraps the error of a send check that Redis could not answer (a
// failover, an outage): the request was not sent, and its entry is not acked, so that it
// comes again (never a dead letter: the site was not asked).
var errSendUnconfirmed = errors.New("fetch: whether the request may leave could not be checked")

// beforeSend asks ctx's send check, if any: nil when the request may leave now,
// errSlotLost or an error wrapping streams.ErrNotHeld when it must not, an error
// wrapping errSendUnconfirmed when Redis could not say (the request is not sent; it
// comes again).
func beforeSend(ctx context.Context) error {
	check, _ := ctx.Value(sendCheckKey{}).(func(context.Context) error)
	if check == nil {
		return nil
	}
	if err := check(ctx); err != nil && !unsent(err) {
		return fmt.Errorf("%w: %w", errSendUnconfirmed, err)
	} else if err != nil {
		return err
	}
	return nil
}

// unsent reports whether err is beforeSend's refusal.
func unsent(err error) bool {
	return errors.Is(err, errSlotLost) || errors.Is(err, streams.ErrNotHeld)
}

// beforeSend checks that the turn still holds its entry and its slot (see above).
func (t *turn) beforeSend(ctx context.Context) error {
	if err := streams.Held(ctx); err != nil {
		return err
	}
	if t.lease == "" || time.Since(t.leaseSeen) < leaseTTL(t.f.settings)/3 {
		return nil
	}
	seen := time.Now()
	held, err := t.f.hosts.Leased(ctx, t.host, t.lease)
	switch {
	case err != nil:
		return err
	case !held:
		return errSlotLost
	}
	t.leaseSeen = seen
	return nil
}

// leaseStart is when the lease of the request with stream ID id began, as this machine's
// clock reads the Redis clock's time in the ID (the script handing a request out leases
// its slot in the same step): a lease is trusted without asking Redis for a third of its
// TTL after it, so the clocks of the fetchers and of Redis must agree to within that
// (NTP does far better). Zero when id is not a stream ID: the lease is always checked.
func leaseStart(id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n)
}
