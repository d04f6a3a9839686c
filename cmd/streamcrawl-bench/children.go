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
)

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
	exe, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.CommandContext(ctx, exe, args...)
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

// startRedisChild runs a throw-away redis-server on a free loopback port.
func startRedisChild(ctx context.Context) (*child, string, error) {
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
	cmd := exec.CommandContext(ctx, bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
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
