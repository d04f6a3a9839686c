// Package streamstest starts real redis-server processes for tests, on free loopback
// ports, and stops them when the test ends: one server (Start), a Redis Cluster with or
// without replicas (StartCluster, StartClusterReplicas) and a primary with replicas
// behind 3 sentinels (StartSentinel). It never mocks Redis. A FaultProxy sits between
// the parts of a crawl and adds latency (to the microsecond), limits bandwidth,
// partitions or resets connections.
package streamstest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server process owned by a test.
type Server struct {
	// Addr is host:port on 127.0.0.1.
	Addr string
	// Dir is the server's working directory (RDB/AOF files).
	Dir string

	t    testing.TB
	conf string // a config file read before args (sentinels keep their state in it)
	args []string
	cmd  *exec.Cmd
}

// Start starts redis-server on a free loopback port with extra config args
// ("--appendonly", "yes", ...) and stops it when t ends. It fails the test when
// redis-server is not installed (.ci/run installs it), never skips.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	bin := redisServer(t)
	s := &Server{Dir: t.TempDir(), t: t, args: args}
	s.startOnFreePort(bin, "redis-server", FreeAddr)
	return s
}

// startOnFreePort starts s on an address from free, trying again on another (up to 5
// times) when another process takes the port first, and kills it when the test ends. It
// fails the test, naming what, when no try starts.
func (s *Server) startOnFreePort(bin, what string, free func(testing.TB) string) {
	s.t.Helper()
	var lastErr error
	for try := 0; try < 5; try++ {
		s.Addr = free(s.t)
		if lastErr = s.start(bin); lastErr == nil {
			s.t.Cleanup(s.Kill)
			return
		}
	}
	s.t.Fatalf("streamstest: start %s: %v", what, lastErr)
}

// redisServer returns the path of redis-server, failing the test when it is not installed.
func redisServer(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("streamstest: redis-server not found on PATH (apt-get install redis-server): %v", err)
	}
	return bin
}

func (s *Server) start(bin string) error {
	_, port, _ := net.SplitHostPort(s.Addr)
	var args []string
	if s.conf != "" {
		args = append(args, s.conf) // redis-server takes a config file only as its first argument
	}
	args = append(args, []string{"--port", port, "--bind", "127.0.0.1", "--dir", s.Dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--daemonize", "no",
		"--logfile", filepath.Join(s.Dir, "redis.log")}...)
	args = append(args, s.args...)
	cmd := exec.Command(bin, args...)
	setPdeathsig(cmd) // the server dies with the test binary, however it ends
	if err := cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		err := c.Ping(context.Background()).Err()
		_ = c.Close()
		if err == nil {
			s.cmd = cmd
			return nil
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	return fmt.Errorf("redis-server on %s did not answer: %s", s.Addr, lastLines(string(log), 5))
}

// URL returns redis://127.0.0.1:port/0.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Client returns a new client closed when the test ends.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Kill stops the server with SIGKILL (no final save).
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Freeze stops the server with SIGSTOP: it keeps its sockets open and answers nothing,
// as a hung machine or one cut off by the network would. Thaw resumes it.
func (s *Server) Freeze() {
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// Thaw resumes a server stopped by Freeze (SIGCONT).
func (s *Server) Thaw() {
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// Alive reports whether the server process runs: started and not killed since.
func (s *Server) Alive() bool { return s.cmd != nil }

// Restart kills the server and starts it again on the same port and directory, so it
// reloads whatever it had persisted (with --appendonly yes, everything acknowledged).
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	bin, _ := exec.LookPath("redis-server")
	var err error
	for try := 0; try < 50; try++ { // the port may linger briefly
		if err = s.start(bin); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("streamstest: restart redis-server: %v", err)
}

// UsedCPU returns the server's used_cpu_user+used_cpu_sys in seconds.
func (s *Server) UsedCPU() float64 {
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	info, err := c.InfoMap(context.Background(), "cpu").Result()
	if err != nil {
		s.t.Fatalf("streamstest: INFO cpu: %v", err)
	}
	user, _ := strconv.ParseFloat(info["CPU"]["used_cpu_user"], 64)
	sys, _ := strconv.ParseFloat(info["CPU"]["used_cpu_sys"], 64)
	return user + sys
}

// UsedMemory returns used_memory less client buffers (which Redis grows and shrinks on
// its own schedule).
func UsedMemory(t testing.TB, rdb redis.UniversalClient) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]int64{}
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if fields["used_memory"] == 0 {
		t.Fatal("no used_memory in INFO memory")
	}
	return fields["used_memory"] - fields["mem_clients_normal"]
}

// FreeAddr returns a free 127.0.0.1:port (free when it returns: a server that starts on
// it later can still lose it to another process, and should try again).
func FreeAddr(t testing.TB) string {
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("streamstest: no free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
