package streamstest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultMasterName is the name StartSentinel's sentinels monitor their primary under.
const DefaultMasterName = "mymaster"

// The sentinels' settings: 3 sentinels, 2 of which must agree that the primary is down;
// a primary that answers nothing for sentinelDownAfter is down for one sentinel. A
// failover that does not finish within sentinelFailoverTimeout is tried again by another.
const (
	sentinelCount           = 3
	sentinelQuorum          = 2
	sentinelDownAfter       = 1000 * time.Millisecond
	sentinelFailoverTimeout = 5 * time.Second
)

// sentinelReady bounds how long StartSentinel waits for the replicas to sync and the
// sentinels to know each other and every replica; failoverReady bounds WaitPrimary.
const (
	sentinelReady = 20 * time.Second
	failoverReady = 30 * time.Second
)

// Sentinel is a Redis primary with replicas watched by 3 sentinels: real redis-server
// processes on free loopback ports, owned by a test. A killed primary is replaced by a
// replica the sentinels promote; clients built from URL follow it.
type Sentinel struct {
	// MasterName is the name the sentinels know the primary by (DefaultMasterName).
	MasterName string
	// Sentinels are the sentinel processes (redis-server --sentinel), in start order.
	Sentinels []*Server

	t     testing.TB
	nodes []*Server // data nodes: the first primary, then its replicas
}

// StartSentinel starts a primary and replicas replicas of it (redis-server, extra config
// args on each), waits until every replica has synced, then starts 3 sentinels
// monitoring the primary as DefaultMasterName (quorum 2, down after 1 s, failover
// timeout 5 s) and waits until each of them knows every replica and the other two
// sentinels, so that a primary killed from then on is failed over. Everything stops when
// t ends. It fails the test when redis-server is not installed, never skips.
func StartSentinel(t testing.TB, replicas int, args ...string) *Sentinel {
	t.Helper()
	if replicas < 1 {
		t.Fatalf("streamstest: a failover needs at least 1 replica, got %d", replicas)
	}
	s := &Sentinel{MasterName: DefaultMasterName, t: t}
	// A full sync starts at once (Redis waits 5 s by default for more replicas to share it).
	args = slices.Concat([]string{"--repl-diskless-sync-delay", "0"}, args)
	primary := Start(t, args...)
	s.nodes = append(s.nodes, primary)
	host, port, _ := net.SplitHostPort(primary.Addr)
	for range replicas {
		s.nodes = append(s.nodes, Start(t, slices.Concat(args, []string{"--replicaof", host, port})...))
	}
	ctx, cancel := context.WithTimeout(t.Context(), sentinelReady)
	defer cancel()
	// Replicas first: a sentinel learns a primary's replicas from its INFO, which it
	// reads at once and then every 10 s; synced replicas are in the first one.
	s.waitFor(ctx, "replicas synced", func(ctx context.Context) error {
		for _, r := range s.nodes[1:] {
			info, err := infoOf(ctx, r.Addr, "replication")
			if err != nil {
				return err
			}
			if info["master_link_status"] != "up" || info["master_sync_in_progress"] != "0" {
				return fmt.Errorf("replica %s: master_link_status:%s master_sync_in_progress:%s", r.Addr,
					info["master_link_status"], info["master_sync_in_progress"])
			}
		}
		return nil
	})
	for range sentinelCount {
		s.Sentinels = append(s.Sentinels, s.startSentinel(host, port))
	}
	s.waitFor(ctx, "sentinels ready", func(ctx context.Context) error {
		for _, sn := range s.Sentinels {
			m, err := s.sentinelClient(sn).Master(ctx, s.MasterName).Result()
			if err != nil {
				return fmt.Errorf("sentinel %s: %w", sn.Addr, err)
			}
			if m["flags"] != "master" || m["num-slaves"] != fmt.Sprint(replicas) || m["num-other-sentinels"] != fmt.Sprint(sentinelCount-1) {
				return fmt.Errorf("sentinel %s: flags %s, %s replicas, %s other sentinels; want master, %d, %d", sn.Addr,
					m["flags"], m["num-slaves"], m["num-other-sentinels"], replicas, sentinelCount-1)
			}
		}
		return nil
	})
	return s
}

// startSentinel starts one sentinel monitoring the primary at host:port. A sentinel
// rewrites its config file with what it learns, so each has its own.
func (s *Sentinel) startSentinel(host, port string) *Server {
	s.t.Helper()
	dir := s.t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	text := fmt.Sprintf("sentinel monitor %[1]s %[2]s %[3]s %[4]d\n"+
		"sentinel down-after-milliseconds %[1]s %[5]d\n"+
		"sentinel failover-timeout %[1]s %[6]d\n"+
		"sentinel parallel-syncs %[1]s 1\n",
		s.MasterName, host, port, sentinelQuorum, ms(sentinelDownAfter), ms(sentinelFailoverTimeout))
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		s.t.Fatalf("streamstest: write sentinel config: %v", err)
	}
	srv := &Server{Dir: dir, t: s.t, conf: conf, args: []string{"--sentinel"}}
	srv.startOnFreePort(redisServer(s.t), "redis sentinel", FreeAddr)
	return srv
}

// waitFor polls ready every 50 ms until it returns nil, failing the test with its last
// error when ctx ends.
func (s *Sentinel) waitFor(ctx context.Context, what string, ready func(ctx context.Context) error) {
	s.t.Helper()
	for {
		err := ready(ctx)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			s.t.Fatalf("streamstest: sentinel setup: %s: not after %v: %v", what, context.Cause(ctx), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sentinelClient returns a client of one sentinel, closed when the test ends.
func (s *Sentinel) sentinelClient(sn *Server) *redis.SentinelClient {
	c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr, MaxRetries: -1, DialTimeout: time.Second})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// URL returns the Sentinel URL of the primary as go-redis ParseFailoverURL reads it:
// redis://<first sentinel>?master_name=<name>&addr=<second sentinel>&addr=<third>.
func (s *Sentinel) URL() string {
	q := url.Values{"master_name": {s.MasterName}}
	for _, sn := range s.Sentinels[1:] {
		q.Add("addr", sn.Addr)
	}
	return "redis://" + s.Sentinels[0].Addr + "?" + q.Encode()
}

// Client returns a new failover client of the primary (it asks the sentinels where the
// primary is and follows a failover), closed when the test ends.
func (s *Sentinel) Client() *redis.Client {
	addrs := make([]string, len(s.Sentinels))
	for i, sn := range s.Sentinels {
		addrs[i] = sn.Addr
	}
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName, SentinelAddrs: addrs})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Nodes returns the data nodes (not the sentinels) in start order: the first primary,
// then the replicas. Which one is primary now is Primary's answer.
func (s *Sentinel) Nodes() []*Server { return slices.Clone(s.nodes) }

// Primary returns the node that the sentinels name as primary now (the answer of most
// of the sentinels that answer). It fails the test when none answers or the address is
// no node of the rig.
func (s *Sentinel) Primary() *Server {
	s.t.Helper()
	addr, err := s.primaryAddr(s.t.Context())
	if err != nil {
		s.t.Fatalf("streamstest: %v", err)
	}
	return s.node(addr)
}

// primaryAddr asks every sentinel for the primary's address and returns the one most of
// those that answer give.
func (s *Sentinel) primaryAddr(ctx context.Context) (string, error) {
	votes := map[string]int{}
	var errs []string
	for _, sn := range s.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr, MaxRetries: -1, DialTimeout: time.Second})
		hp, err := c.GetMasterAddrByName(ctx, s.MasterName).Result()
		_ = c.Close()
		if err != nil || len(hp) != 2 {
			errs = append(errs, fmt.Sprintf("%s: %v %v", sn.Addr, hp, err))
			continue
		}
		votes[net.JoinHostPort(hp[0], hp[1])]++
	}
	best, n := "", 0
	for a, v := range votes {
		if v > n || v == n && a < best {
			best, n = a, v
		}
	}
	if best == "" {
		return "", fmt.Errorf("no sentinel names the primary %s: %s", s.MasterName, strings.Join(errs, "; "))
	}
	return best, nil
}

// node returns the data node listening on addr, failing the test when there is none.
func (s *Sentinel) node(addr string) *Server {
	s.t.Helper()
	for _, n := range s.nodes {
		if n.Addr == addr {
			return n
		}
	}
	s.t.Fatalf("streamstest: the sentinels name %s as primary, which is no node of the rig", addr)
	return nil
}

// KillPrimary kills the current primary with SIGKILL (no final save, no goodbye to its
// replicas) and returns it.
func (s *Sentinel) KillPrimary() *Server {
	s.t.Helper()
	p := s.Primary()
	p.Kill()
	return p
}

// WaitPrimary waits until every sentinel names the same primary, other than old, and
// that node says it is a master (ROLE), then returns it. It fails the test when that
// does not happen within 30 s.
func (s *Sentinel) WaitPrimary(old *Server) *Server {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), failoverReady)
	defer cancel()
	var primary string
	s.waitFor(ctx, "failover from "+old.Addr, func(ctx context.Context) error {
		primary = ""
		for _, sn := range s.Sentinels {
			c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr, MaxRetries: -1, DialTimeout: time.Second})
			hp, err := c.GetMasterAddrByName(ctx, s.MasterName).Result()
			_ = c.Close()
			if err != nil || len(hp) != 2 {
				return fmt.Errorf("sentinel %s: %v %v", sn.Addr, hp, err)
			}
			a := net.JoinHostPort(hp[0], hp[1])
			switch {
			case a == old.Addr:
				return fmt.Errorf("sentinel %s still names %s", sn.Addr, a)
			case primary != "" && a != primary:
				return fmt.Errorf("sentinels name %s and %s", primary, a)
			}
			primary = a
		}
		role, err := roleOf(ctx, primary)
		if err != nil {
			return err
		}
		if role != "master" {
			return fmt.Errorf("%s is named primary but is a %s", primary, role)
		}
		return nil
	})
	return s.node(primary)
}

// Kill stops every process of the rig with SIGKILL. Calling it again does nothing.
func (s *Sentinel) Kill() {
	for _, sn := range s.Sentinels {
		sn.Kill()
	}
	for _, n := range s.nodes {
		n.Kill()
	}
}

// infoOf reads one INFO section of the server at addr as key -> value.
func infoOf(ctx context.Context, addr, section string) (map[string]string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: INFO %s: %w", addr, section, err)
	}
	return infoFields(info), nil
}

// roleOf returns the role INFO replication gives the server at addr: master or slave.
func roleOf(ctx context.Context, addr string) (string, error) {
	info, err := infoOf(ctx, addr, "replication")
	if err != nil {
		return "", err
	}
	return info["role"], nil
}
