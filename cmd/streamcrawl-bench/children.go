package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// childEnv marks the processes this binary starts as itself (demo site, stage workers):
// such a process never starts another one, so a mistaken spawn path (a test binary run
// as the command without its switch, say) cannot start children without end.
const childEnv = "STREAMCRAWL_BENCH_CHILD"

// selfCommand is this binary run with args as a child process (marked with childEnv; the
// switch that makes a test binary act as the command is passed on). A child asking for a
// child gets an error.
func selfCommand(ctx context.Context, args ...string) (*exec.Cmd, error) {
	if os.Getenv(childEnv) != "" {
		return nil, fmt.Errorf("streamcrawl-bench: %s is a child of a bench run (%s is set) and may not start %q: refusing a recursive spawn",
			os.Args[0], childEnv, strings.Join(args, " "))
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1", "STREAMCRAWL_TEST_MAIN=1")
	return cmd, nil
}

// child is a helper process (demo site, redis-server) that bench starts and stops.
type child struct{ cmd *exec.Cmd }

func (c *child) stop() {
	if c == nil || c.cmd == nil || c.cmd.Process == nil {
		return
	}
	_ = c.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// startSiteChild runs `streamcrawl demo-site` in its own process, so that the site's CPU
// is not counted as the crawler's, and returns its base URL.
func startSiteChild(ctx context.Context, pages int, extra ...string) (*child, string, error) {
	args := append([]string{"demo-site", "--addr", "127.0.0.1:0", "--pages", strconv.Itoa(pages), "--log-level", "error"}, extra...)
	return startServerChild(ctx, "demo site", args...)
}

// startServerChild runs this binary with args, a command that prints "listening on
// <base URL>" first, and returns the child and that URL; what names it in errors.
func startServerChild(ctx context.Context, what string, args ...string) (*child, string, error) {
	cmd, err := selfCommand(ctx, args...)
	if err != nil {
		return nil, "", err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	c := &child{cmd: cmd}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening on ") {
		c.stop()
		return nil, "", fmt.Errorf("%s did not start: %q %v", what, line, err)
	}
	return c, strings.TrimSpace(strings.TrimPrefix(line, "listening on ")), nil
}

// startRedisChild runs a throw-away redis-server on a free loopback port, with extra
// config args.
func startRedisChild(ctx context.Context, extra ...string) (*child, string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	addr := l.Addr().String()
	_ = l.Close()
	_, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "streamcrawl-bench-redis")
	if err != nil {
		return nil, "", err
	}
	args := append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	c := &child{cmd: cmd}
	for i := 0; i < 100; i++ {
		if conn, err := net.Dial("tcp", addr); err == nil {
			_ = conn.Close()
			return c, "redis://" + addr + "/0", nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.stop()
	return nil, "", fmt.Errorf("redis-server on %s did not start", addr)
}

// startReplicaChildren runs n throw-away replicas of the redis-server at primary
// (host:port) and waits until each has synced with it.
func startReplicaChildren(ctx context.Context, primary string, n int) ([]*child, error) {
	host, port, _ := net.SplitHostPort(primary)
	var out []*child
	stopAll := func() {
		for _, c := range out {
			c.stop()
		}
	}
	for range n {
		c, url, err := startRedisChild(ctx, "--replicaof", host, port)
		if err != nil {
			stopAll()
			return nil, err
		}
		out = append(out, c)
		rdb := redis.NewClient(&redis.Options{Addr: strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0")})
		synced := false
		for i := 0; i < 200 && !synced; i++ {
			info, err := rdb.InfoMap(ctx, "replication").Result()
			synced = err == nil && info["Replication"]["master_link_status"] == "up"
			if !synced {
				time.Sleep(50 * time.Millisecond)
			}
		}
		_ = rdb.Close()
		if !synced {
			stopAll()
			return nil, fmt.Errorf("replica %s of %s did not sync within 10 s", url, primary)
		}
	}
	return out, nil
}

// realRedis returns the Redis URL of --redis or $REDIS_URL, or starts a throw-away
// redis-server from PATH (stop stops it; a no-op otherwise), for the commands that need a
// real Redis: what names the command in the error when there is none.
func (a *app) realRedis(ctx context.Context, what string) (url string, stop func(), err error) {
	url = a.RedisURL
	if url == "" {
		url = os.Getenv("REDIS_URL")
	}
	if url != "" {
		return url, func() {}, nil
	}
	rc, url, err := startRedisChild(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("%s needs a real Redis: pass --redis or install redis-server: %w", what, err)
	}
	return url, rc.stop, nil
}

// benchEnv is realRedis and a new temporary work directory, both named for what (the
// command): done stops the Redis it started and removes the directory unless keep.
func (a *app) benchEnv(ctx context.Context, what string, keep bool) (url, dir string, done func(), err error) {
	url, stop, err := a.realRedis(ctx, what)
	if err != nil {
		return "", "", nil, err
	}
	if dir, err = os.MkdirTemp("", "streamcrawl-"+what); err != nil {
		stop()
		return "", "", nil, err
	}
	return url, dir, func() {
		if !keep {
			_ = os.RemoveAll(dir)
		}
		stop()
	}, nil
}

// inBenchEnv is the RunE of a benchmark command: it runs run in a benchEnv named what,
// keeping the work directory when keep is set (nil: never), and ends the environment
// when run returns.
func (a *app) inBenchEnv(what string, keep *bool, run func(ctx context.Context, url, dir string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		url, dir, done, err := a.benchEnv(ctx, what, keep != nil && *keep)
		if err != nil {
			return err
		}
		defer done()
		return run(ctx, url, dir)
	}
}

// freshCrawl parses the YAML spider yaml (file is its name in messages), connects to
// the Redis at redisURL and deletes every key of the spider's crawl, so that a benchmark
// run starts from nothing. Close the client when done.
func freshCrawl(ctx context.Context, redisURL, file string, yaml []byte) (*spiders.Spider, *streams.Client, error) {
	sp, _, err := spiders.Parse(file, yaml)
	if err != nil {
		return nil, nil, err
	}
	c, err := streams.Connect(ctx, streams.ClientOptions{URL: redisURL})
	if err != nil {
		return nil, nil, err
	}
	if err := resetCrawl(ctx, c, sp.Name); err != nil {
		c.Close()
		return nil, nil, err
	}
	return sp, c, nil
}

// resetCrawl deletes every key of the crawl name on c.
func resetCrawl(ctx context.Context, c *streams.Client, name string) error {
	old, err := streams.ReadLayout(ctx, c, name)
	if err != nil {
		return err
	}
	_, err = inspect.Reset(ctx, c, old)
	return err
}
