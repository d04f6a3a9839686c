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

// Cluster is a Redis Cluster, one redis-server process per node, owned by a test: masters
// only (StartCluster) or masters with replicas (StartClusterReplicas).
type Cluster struct {
	// Addrs are the masters' host:port on 127.0.0.1 at start, in start order.
	Addrs []string

	t     testing.TB
	nodes []*Server // every node, in start order
}

// clusterReady bounds how long StartCluster waits for every node to agree on the slot
// map, and WaitReady for a failed master's slots to be served again.
const clusterReady = 20 * time.Second

// Node timeouts: how long a node may not answer before the others count it as failing.
// With replicas it is short, so a killed master is failed over in a few seconds.
const (
	clusterNodeTimeout        = 5 * time.Second
	clusterReplicaNodeTimeout = 2 * time.Second
)

// StartCluster starts masters (at least 3) redis-server processes in cluster mode on free
// loopback ports, joins them with redis-cli --cluster create, spreads the 16384 slots over
// them, and waits until every node reports cluster_state:ok and the same slot map. Extra
// config args apply to every node. The nodes stop when t ends. It fails the test when
// redis-server or redis-cli is not installed (.ci/run installs them), never skips.
func StartCluster(t testing.TB, masters int, args ...string) *Cluster {
	t.Helper()
	return startCluster(t, masters, 0, args)
}

// StartClusterReplicas is StartCluster with replicas replicas of each master (nodes
// masters×(1+replicas)), and a node timeout of 2 s: a killed master's slots are taken
// over by one of its replicas within a few seconds (WaitReady waits for that). It
// returns once every replica has synced with its master.
func StartClusterReplicas(t testing.TB, masters, replicas int, args ...string) *Cluster {
	t.Helper()
	if replicas < 1 {
		t.Fatalf("streamstest: StartClusterReplicas needs at least 1 replica per master, got %d", replicas)
	}
	return startCluster(t, masters, replicas, args)
}

func startCluster(t testing.TB, masters, replicas int, args []string) *Cluster {
	t.Helper()
	if masters < 3 {
		t.Fatalf("streamstest: a Redis Cluster needs at least 3 masters, got %d", masters)
	}
	bin := redisServer(t)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("streamstest: redis-cli not found on PATH (apt-get install redis-tools): %v", err)
	}
	timeout := clusterNodeTimeout
	if replicas > 0 {
		timeout = clusterReplicaNodeTimeout
		// A replica's full sync starts at once (Redis waits 5 s for more replicas by default).
		args = slices.Concat([]string{"--repl-diskless-sync-delay", "0"}, args)
	}
	args = slices.Concat([]string{"--cluster-node-timeout", strconv.FormatInt(timeout.Milliseconds(), 10)}, args)
	c := &Cluster{t: t}
	var all []string
	for range masters * (1 + replicas) {
		c.nodes = append(c.nodes, startNode(t, bin, args))
		all = append(all, c.nodes[len(c.nodes)-1].Addr)
	}

	ctx, cancel := context.WithTimeout(t.Context(), clusterReady)
	defer cancel()
	create := exec.CommandContext(ctx, cli, slices.Concat([]string{"--cluster", "create"}, all,
		[]string{"--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes"})...)
	setPdeathsig(create)
	if out, err := create.CombinedOutput(); err != nil {
		if ctx.Err() != nil { // killed at the deadline while waiting for the nodes to join
			err = fmt.Errorf("no agreement within %v (%w)", clusterReady, err)
		}
		t.Fatalf("streamstest: redis-cli --cluster create %s: %v: %s", strings.Join(all, " "), err, lastLines(string(out), 5))
	}
	if err := c.waitReady(ctx, masters); err != nil {
		t.Fatalf("streamstest: Redis Cluster %s not ready after %v: %v", strings.Join(all, ","), clusterReady, err)
	}
	for _, m := range c.Masters() {
		c.Addrs = append(c.Addrs, m.Addr)
	}
	return c
}

// waitReady polls converged every 50 ms until it holds or ctx ends.
func (c *Cluster) waitReady(ctx context.Context, masters int) error {
	for {
		notReady := c.converged(ctx, masters)
		if notReady == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return notReady
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// WaitReady waits until the cluster serves every slot again from as many masters as it
// started with, all alive, every live node agreeing and every live replica synced: after
// a master is killed, until one of its replicas has taken its slots over. It fails the
// test after 20 s.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), clusterReady)
	defer cancel()
	if err := c.waitReady(ctx, len(c.Addrs)); err != nil {
		c.t.Fatalf("streamstest: Redis Cluster not ready after %v: %v", clusterReady, err)
	}
}

// startNode starts one cluster-mode redis-server on a port p whose cluster bus port p+10000
// is free too, retrying when another process takes either port first.
func startNode(t testing.TB, bin string, args []string) *Server {
	t.Helper()
	s := &Server{Dir: t.TempDir(), t: t}
	s.args = slices.Concat([]string{"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(s.Dir, "nodes.conf")}, args)
	s.startOnFreePort(bin, "cluster redis-server", freeClusterAddr)
	return s
}

// freeClusterAddr returns a free 127.0.0.1:port with port <= 55535 whose cluster bus port
// (port+10000) is free as well.
func freeClusterAddr(t testing.TB) string {
	for try := 0; try < 200; try++ {
		addr := FreeAddr(t)
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

// converged returns nil when every live node reports cluster_state:ok with all 16384
// slots assigned, knows every node, and lists the same masters for the same slot ranges
// in CLUSTER SLOTS; when those are masters live nodes of the cluster, masters of them;
// and when every other live node is a replica whose link to its master is up. Otherwise
// it returns an error saying what is not there yet.
func (c *Cluster) converged(ctx context.Context, masters int) error {
	var first string
	var slots []redis.ClusterSlot
	for _, n := range c.nodes {
		if !n.Alive() {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1, DialTimeout: time.Second})
		info, err := rdb.ClusterInfo(ctx).Result()
		var ns []redis.ClusterSlot
		if err == nil {
			ns, err = rdb.ClusterSlots(ctx).Result()
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
		m := slotMap(ns)
		if first == "" {
			first, slots = m, ns
		} else if m != first {
			return fmt.Errorf("%s sees slots %s, %s sees %s", c.nodes[0].Addr, first, n.Addr, m)
		}
	}
	if first == "" {
		return fmt.Errorf("no node is alive")
	}
	serving, err := c.coversAll(slots, masters)
	if err != nil {
		return err
	}
	for _, n := range c.nodes {
		if !n.Alive() || serving[n.Addr] {
			continue
		}
		info, err := infoOf(ctx, n.Addr, "replication")
		if err != nil {
			return err
		}
		if info["role"] != "slave" || info["master_link_status"] != "up" || info["master_sync_in_progress"] != "0" {
			return fmt.Errorf("%s: role:%s master_link_status:%s master_sync_in_progress:%s", n.Addr,
				info["role"], info["master_link_status"], info["master_sync_in_progress"])
		}
	}
	return nil
}

// coversAll checks that every slot range has a master, that masters distinct masters
// serve them and that each is a live node of the cluster; it returns their addresses.
func (c *Cluster) coversAll(slots []redis.ClusterSlot, masters int) (map[string]bool, error) {
	serving := map[string]bool{}
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			return nil, fmt.Errorf("slots %d-%d have no master", s.Start, s.End)
		}
		serving[s.Nodes[0].Addr] = true
	}
	for a := range serving {
		n := c.node(a)
		if n == nil || !n.Alive() {
			return nil, fmt.Errorf("slots are served by %s, which is no live node of the cluster", a)
		}
	}
	if len(serving) != masters {
		return nil, fmt.Errorf("%d masters serve slots, want %d: %v", len(serving), masters, serving)
	}
	return serving, nil
}

// node returns the node listening on addr, nil when there is none.
func (c *Cluster) node(addr string) *Server {
	for _, n := range c.nodes {
		if n.Addr == addr {
			return n
		}
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

// URL returns redis+cluster://127.0.0.1:p1,127.0.0.1:p2,... naming every node, so a
// client started after a node died still finds the others.
func (c *Cluster) URL() string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr
	}
	return "redis+cluster://" + strings.Join(addrs, ",")
}

// Client returns a new cluster client, closed when the test ends. It reloads the slot
// map every second (go-redis's default is a minute), so after a failover it stops
// dialling the dead master within a second or two.
func (c *Cluster) Client() *redis.ClusterClient {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ClusterStateReloadInterval: time.Second})
	c.t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Masters returns the nodes that serve slots now, in start order (at start, the order of
// Addrs), read from a live node's CLUSTER SLOTS: for per-node checks (INFO, DBSIZE
// through Server.Client) or faults (Server.Kill; Server.Restart: a restarted node keeps
// its nodes.conf, so it rejoins with the same id: as the master of its slots in a
// cluster without replicas, as a replica once a replica has taken them over).
func (c *Cluster) Masters() []*Server { return c.byRole(true) }

// Replicas returns the live nodes that serve no slots (replicas), in start order.
func (c *Cluster) Replicas() []*Server { return c.byRole(false) }

// byRole returns the live nodes that serve slots (master) or do not, in start order.
func (c *Cluster) byRole(master bool) []*Server {
	c.t.Helper()
	var slots []redis.ClusterSlot
	var err error
	for _, n := range c.nodes {
		if !n.Alive() {
			continue
		}
		rdb := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1, DialTimeout: time.Second})
		slots, err = rdb.ClusterSlots(c.t.Context()).Result()
		_ = rdb.Close()
		if err == nil {
			break
		}
	}
	if slots == nil {
		c.t.Fatalf("streamstest: no live node answers CLUSTER SLOTS: %v", err)
	}
	serving := map[string]bool{}
	for _, s := range slots {
		if len(s.Nodes) > 0 {
			serving[s.Nodes[0].Addr] = true
		}
	}
	var out []*Server
	for _, n := range c.nodes {
		if serving[n.Addr] == master && (master || n.Alive()) {
			out = append(out, n)
		}
	}
	return out
}

// Kill stops every node with SIGKILL. Calling it again does nothing.
func (c *Cluster) Kill() {
	for _, n := range c.nodes {
		n.Kill()
	}
}
