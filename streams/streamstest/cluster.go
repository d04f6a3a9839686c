package streamstest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of masters only (no replicas), one redis-server process
// per master, owned by a test.
type Cluster struct {
	// Addrs are the masters' host:port on 127.0.0.1, in start order.
	Addrs []string

	t     testing.TB
	nodes []*Server
}

// clusterReady bounds how long StartCluster waits for every node to agree on the slot map.
const clusterReady = 20 * time.Second

// StartCluster starts masters (at least 3) redis-server processes in cluster mode on free
// loopback ports, joins them with redis-cli --cluster create, spreads the 16384 slots over
// them, and waits until every node reports cluster_state:ok and the same slot map. Extra
// config args apply to every node. The nodes stop when t ends. It fails the test when
// redis-server or redis-cli is not installed (.ci/run installs them), never skips.
func StartCluster(t testing.TB, masters int, args ...string) *Cluster {
	t.Helper()
	if masters < 3 {
		t.Fatalf("streamstest: a Redis Cluster needs at least 3 masters, got %d", masters)
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("streamstest: redis-server not found on PATH (apt-get install redis-server): %v", err)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("streamstest: redis-cli not found on PATH (apt-get install redis-tools): %v", err)
	}
	c := &Cluster{t: t}
	for range masters {
		c.nodes = append(c.nodes, startNode(t, bin, args))
		c.Addrs = append(c.Addrs, c.nodes[len(c.nodes)-1].Addr)
	}

	ctx, cancel := context.WithTimeout(t.Context(), clusterReady)
	defer cancel()
	create := exec.CommandContext(ctx, cli, slices.Concat([]string{"--cluster", "create"}, c.Addrs,
		[]string{"--cluster-replicas", "0", "--cluster-yes"})...)
	setPdeathsig(create)
	if out, err := create.CombinedOutput(); err != nil {
		if ctx.Err() != nil { // killed at the deadline while waiting for the nodes to join
			err = fmt.Errorf("no agreement within %v (%w)", clusterReady, err)
		}
		t.Fatalf("streamstest: redis-cli --cluster create %s: %v: %s", strings.Join(c.Addrs, " "), err, lastLines(string(out), 5))
	}
	var notReady error
	for {
		if notReady = c.converged(ctx); notReady == nil {
			return c
		}
		select {
		case <-ctx.Done():
			t.Fatalf("streamstest: Redis Cluster %s not ready after %v: %v", strings.Join(c.Addrs, ","), clusterReady, notReady)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startNode starts one cluster-mode redis-server on a port p whose cluster bus port p+10000
// is free too, retrying when another process takes either port first.
func startNode(t testing.TB, bin string, args []string) *Server {
	t.Helper()
	s := &Server{Dir: t.TempDir(), t: t}
	s.args = slices.Concat([]string{"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(s.Dir, "nodes.conf"),
		"--cluster-node-timeout", "5000"}, args)
	var lastErr error
	for try := 0; try < 5; try++ {
		s.Addr = freeClusterAddr(t)
		if lastErr = s.start(bin); lastErr == nil {
			t.Cleanup(s.Kill)
			return s
		}
	}
	t.Fatalf("streamstest: start cluster redis-server: %v", lastErr)
	return nil
}

// freeClusterAddr returns a free 127.0.0.1:port with port <= 55535 whose cluster bus port
// (port+10000) is free as well.
func freeClusterAddr(t testing.TB) string {
	for try := 0; try < 200; try++ {
		addr := freeAddr(t)
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if port > 65535-10000 {
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		if err != nil {
			continue
		}
		_ = bus.Close()
		return addr
	}
	t.Fatalf("streamstest: no free port p <= 55535 with p+10000 free for a cluster node")
	return ""
}

// converged returns nil when every node reports cluster_state:ok with all 16384 slots
// assigned and lists the same masters for the same slot ranges in CLUSTER SLOTS; otherwise
// an error saying what is not there yet.
func (c *Cluster) converged(ctx context.Context) error {
	var first string
	for _, n := range c.nodes {
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1, DialTimeout: time.Second})
		info, err := rdb.ClusterInfo(ctx).Result()
		var slots []redis.ClusterSlot
		if err == nil {
			slots, err = rdb.ClusterSlots(ctx).Result()
		}
		_ = rdb.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", n.Addr, err)
		}
		fields := infoFields(info)
		if fields["cluster_state"] != "ok" || fields["cluster_slots_assigned"] != "16384" ||
			fields["cluster_known_nodes"] != strconv.Itoa(len(c.nodes)) {
			return fmt.Errorf("%s: cluster_state:%s cluster_slots_assigned:%s cluster_known_nodes:%s", n.Addr,
				fields["cluster_state"], fields["cluster_slots_assigned"], fields["cluster_known_nodes"])
		}
		m := slotMap(slots)
		if first == "" {
			first = m
			if err := c.coversAll(slots); err != nil {
				return fmt.Errorf("%s: %w", n.Addr, err)
			}
		} else if m != first {
			return fmt.Errorf("%s sees slots %s, %s sees %s", c.nodes[0].Addr, first, n.Addr, m)
		}
	}
	return nil
}

// coversAll checks that the slot ranges are served by exactly the cluster's own masters.
func (c *Cluster) coversAll(slots []redis.ClusterSlot) error {
	seen := map[string]bool{}
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			return fmt.Errorf("slots %d-%d have no master", s.Start, s.End)
		}
		seen[s.Nodes[0].Addr] = true
	}
	for _, a := range c.Addrs {
		if !seen[a] {
			return fmt.Errorf("master %s serves no slots (masters seen: %v)", a, seen)
		}
	}
	if len(seen) != len(c.Addrs) {
		return fmt.Errorf("unknown masters serve slots: %v", seen)
	}
	return nil
}

// slotMap renders CLUSTER SLOTS as "start-end=addr/id,..." sorted by start slot, so the
// views of two nodes compare as strings.
func slotMap(slots []redis.ClusterSlot) string {
	slots = slices.Clone(slots)
	slices.SortFunc(slots, func(a, b redis.ClusterSlot) int { return a.Start - b.Start })
	parts := make([]string, 0, len(slots))
	for _, s := range slots {
		master := "none"
		if len(s.Nodes) > 0 {
			master = s.Nodes[0].Addr + "/" + s.Nodes[0].ID
		}
		parts = append(parts, fmt.Sprintf("%d-%d=%s", s.Start, s.End, master))
	}
	return strings.Join(parts, ",")
}

// infoFields parses "key:value" lines of CLUSTER INFO or INFO.
func infoFields(info string) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

// URL returns redis+cluster://127.0.0.1:p1,127.0.0.1:p2,... naming every master.
func (c *Cluster) URL() string { return "redis+cluster://" + strings.Join(c.Addrs, ",") }

// Client returns a new cluster client, closed when the test ends.
func (c *Cluster) Client() *redis.ClusterClient {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	c.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Masters returns the master servers in the order of Addrs, for per-node checks (INFO,
// DBSIZE through Server.Client) or faults (Server.Kill, Server.Restart: a restarted node
// keeps its nodes.conf, so it rejoins with the same id and slots).
func (c *Cluster) Masters() []*Server { return slices.Clone(c.nodes) }

// Kill stops every node with SIGKILL. Calling it again does nothing.
func (c *Cluster) Kill() {
	for _, n := range c.nodes {
		n.Kill()
	}
}
