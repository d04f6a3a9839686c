package streams_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestConnectSentinelFollowsAFailover connects through a Sentinel URL with durability
// replicated, publishes, kills the primary, and publishes again through the same
// client: the writes made during the failover are refused as an outage (never another
// error), and once a replica is promoted they go to it, with every message published
// before. Two replicas: durability replicated waits for one, and after the failover the
// other one is it (with a single replica, writes wait until the old primary is back as
// a replica).
func TestConnectSentinelFollowsAFailover(t *testing.T) {
	t.Parallel()
	s := streamstest.StartSentinel(t, 2)
	ctx := t.Context()
	c, err := streams.Connect(ctx, streams.ClientOptions{URL: s.URL(), CheckSettings: true})
	if err != nil {
		t.Fatalf("Connect(%s): %v", s.URL(), err)
	}
	defer c.Close()
	if !strings.Contains(c.Addr, streamstest.DefaultMasterName) {
		t.Errorf("client address %q does not name the primary %s", c.Addr, streamstest.DefaultMasterName)
	}
	if err := c.SetDurability(ctx, streams.Durability{Mode: spiders.DurabilityReplicated}); err != nil {
		t.Fatalf("SetDurability replicated behind Sentinel: %v", err)
	}
	pub, err := streams.NewPublisher(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Shutdown(context.Background())
	const before = 20
	for i := range before {
		if err := pub.Publish("s", message.NewMessage(fmt.Sprint(i), []byte("x"))); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	old := s.KillPrimary()
	var refusals, others []error
	published := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		err := pub.Publish("s", message.NewMessage("after", []byte("x")))
		if err == nil {
			published = true
			break
		}
		if streams.IsWriteRefused(err) {
			refusals = append(refusals, err)
		} else {
			others = append(others, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !published {
		t.Fatalf("no publish went through within 30 s of killing the primary; last refusals %v, other errors %v", tailErrs(refusals), others)
	}
	if len(others) > 0 {
		t.Errorf("errors during the failover that are not an outage: %v", others)
	}
	t.Logf("%d publishes refused as an outage during the failover, e.g. %v", len(refusals), tailErrs(refusals))
	primary := s.Primary()
	if primary == old {
		t.Fatalf("the sentinels still name the killed primary %s", old.Addr)
	}
	if n, err := primary.Client().XLen(ctx, "s").Result(); err != nil || n != before+1 {
		t.Errorf("the new primary %s holds %d entries (%v), want %d: every message published with durability replicated, and the one after", primary.Addr, n, err, before+1)
	}
}

func tailErrs(errs []error) []error {
	if len(errs) > 2 {
		return errs[len(errs)-2:]
	}
	return errs
}

// TestConnectSentinelErrors: a Sentinel URL without a name, and sentinels that do not
// answer, are errors at connect time, saying which.
func TestConnectSentinelErrors(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	for url, want := range map[string]string{
		"redis://" + closed + "?master_name=":                 "bad redis sentinel url",
		"redis://" + closed + "?master_name=m&bogus=1":        "bad redis sentinel url",
		"redis://" + closed + "?master_name=m&addr=" + closed: "cannot reach the redis primary m",
	} {
		c, err := streams.Connect(t.Context(), streams.ClientOptions{URL: url})
		if err == nil {
			_ = c.Close()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Connect(%s): %v, want %q", url, err, want)
		}
	}
}

// TestUnreachableRedisIsAnOutage: errors of a Redis that cannot be reached or dies under
// a command are outages (held, never a failed delivery); a client closed by its own
// process and an ended context are not.
func TestUnreachableRedisIsAnOutage(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	ctx := context.Background()
	refused := redis.NewClient(&redis.Options{Addr: closed, MaxRetries: -1}).Ping(ctx).Err()

	srv := streamstest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() { blocked <- c.BLPop(ctx, 0, "nothing").Err() }()
	time.Sleep(100 * time.Millisecond)
	srv.Kill()
	died := <-blocked

	shut := redis.NewClient(&redis.Options{Addr: closed})
	_ = shut.Close()
	clientClosed := shut.Ping(ctx).Err()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	cancelled := redis.NewClient(&redis.Options{Addr: closed}).Ping(cctx).Err()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", refused, true},
		{"server killed under a command", died, true},
		{"wrapped", fmt.Errorf("handlers: output: %w", refused), true},
		{"client closed", clientClosed, false},
		{"context cancelled", cancelled, false},
		{"other", errors.New("ERR wrong"), false},
	} {
		if tc.err == nil {
			t.Fatalf("%s: no error", tc.name)
		}
		if got := streams.IsWriteRefused(tc.err); got != tc.want {
			t.Errorf("%s: IsWriteRefused(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
