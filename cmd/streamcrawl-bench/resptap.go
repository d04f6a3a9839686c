package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// respTap is a TCP relay on a free loopback port that counts the Redis commands its
// clients send and the writes they come in: a write is what a client sent before it
// stopped to read replies (one read of the relay that ends where a command ends), so
// its count is the process's round trips to Redis, and the commands that share one are
// a pipeline. A process whose Redis URL names Addr goes through it, to upstream.
type respTap struct {
	Addr string

	ln       net.Listener
	upstream string
	mu       sync.Mutex
	cmds     map[string]int64 // by command (an EVALSHA by script: "EVALSHA 1a2b3c4d")
	batches  map[string]int64 // by what one write held ("XACK+XREADGROUP")
	writes   int64
	conns    sync.WaitGroup
	closed   chan struct{}
	openConn map[net.Conn]bool
}

// newRespTap starts a tap to upstream (host:port).
func newRespTap(upstream string) (*respTap, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &respTap{Addr: ln.Addr().String(), ln: ln, upstream: upstream, closed: make(chan struct{}), openConn: map[net.Conn]bool{}}
	t.reset()
	go t.accept()
	return t, nil
}

// tapCounts are the commands and writes a tap saw since its last reset.
type tapCounts struct {
	Cmds    map[string]int64
	Batches map[string]int64
	Writes  int64
}

// take returns the counts and starts new ones.
func (t *respTap) take() tapCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := tapCounts{Cmds: t.cmds, Batches: t.batches, Writes: t.writes}
	t.reset()
	return c
}

func (t *respTap) reset() { t.cmds, t.batches, t.writes = map[string]int64{}, map[string]int64{}, 0 }

// close stops the tap and its connections.
func (t *respTap) close() {
	close(t.closed)
	_ = t.ln.Close()
	t.mu.Lock()
	for c := range t.openConn {
		_ = c.Close()
	}
	t.mu.Unlock()
	t.conns.Wait()
}

func (t *respTap) accept() {
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", t.upstream)
		if err != nil {
			_ = c.Close()
			continue
		}
		t.mu.Lock()
		t.openConn[c], t.openConn[up] = true, true
		t.mu.Unlock()
		t.conns.Add(2)
		go func() {
			defer t.conns.Done()
			_, _ = io.Copy(c, up)
			_ = c.Close()
		}()
		go func() {
			defer t.conns.Done()
			t.relay(up, c)
			_ = up.Close()
			t.mu.Lock()
			delete(t.openConn, c)
			delete(t.openConn, up)
			t.mu.Unlock()
		}()
	}
}

// relay copies the client's commands to up, counting them.
func (t *respTap) relay(up io.Writer, c io.Reader) {
	var p respParser
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			p.feed(buf[:n])
			if p.atBoundary() && len(p.batch) > 0 {
				t.record(p.batch)
				p.batch = p.batch[:0]
			}
			if _, werr := up.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// record counts one write of the commands batch.
func (t *respTap) record(batch []string) {
	names := slices.Clone(batch)
	slices.Sort(names)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writes++
	for _, n := range names {
		t.cmds[n]++
	}
	t.batches[strings.Join(slices.Compact(names), "+")]++
}

// respParser follows a client's stream of RESP arrays of bulk strings (what go-redis
// sends) and collects the name of each command it completes (and, for EVALSHA, the
// script's SHA's first 8 characters).
type respParser struct {
	batch []string

	line   []byte // a "*N" or "$N" header read so far
	args   int    // arguments of the command left to read (0: between commands)
	bulk   int    // bytes of the current bulk string left, its CRLF included (0: a header next)
	arg    int    // index of the current argument
	name   []byte
	sha    []byte
	broken bool // the stream is not what we follow: stop counting
}

// atBoundary reports whether the stream is between two commands.
func (p *respParser) atBoundary() bool { return p.args == 0 && len(p.line) == 0 && !p.broken }

func (p *respParser) feed(b []byte) {
	for len(b) > 0 && !p.broken {
		if p.bulk == 0 {
			// A header line: "*N\r\n" between commands, "$N\r\n" before an argument.
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				p.line = append(p.line, b...)
				return
			}
			p.line = append(p.line, b[:i+1]...)
			b = b[i+1:]
			p.header()
			continue
		}
		// Inside a bulk string: keep what names the command, skip the rest.
		k := min(len(b), p.bulk)
		chunk := b[:k]
		switch {
		case p.arg == 0 && len(p.name) < 64:
			p.name = append(p.name, chunk...)
		case p.arg == 1 && len(p.sha) < 64:
			p.sha = append(p.sha, chunk...)
		}
		p.bulk -= k
		b = b[k:]
		if p.bulk == 0 {
			p.endArg()
		}
	}
}

// header reads the header line in p.line.
func (p *respParser) header() {
	line := bytes.TrimRight(p.line, "\r\n")
	p.line = p.line[:0]
	if len(line) < 2 {
		p.broken = true
		return
	}
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil || n < 0 {
		p.broken = true
		return
	}
	switch {
	case line[0] == '*' && p.args == 0:
		p.args, p.arg, p.bulk = n, -1, 0
		p.name, p.sha = p.name[:0], p.sha[:0]
		if n == 0 {
			p.args = 0
		}
	case line[0] == '$' && p.args > 0:
		p.arg++
		p.bulk = n + 2
	default:
		p.broken = true
	}
}

// endArg ends an argument, and the command after its last.
func (p *respParser) endArg() {
	p.args--
	p.bulk = 0
	if p.args > 0 {
		return
	}
	name := strings.ToUpper(strings.TrimRight(string(p.name), "\r\n"))
	if name == "EVALSHA" {
		sha := strings.TrimRight(string(p.sha), "\r\n")
		name += " " + sha[:min(8, len(sha))]
	}
	p.batch = append(p.batch, name)
}

// printTapCounts prints c per page: round trips, commands by kind, and the writes by
// what they held, most first, down to 0.01 a page.
func printTapCounts(w io.Writer, what string, c tapCounts, pages int64) {
	per := func(n int64) float64 { return float64(n) / float64(max(pages, 1)) }
	var cmds int64
	for _, n := range c.Cmds {
		cmds += n
	}
	fmt.Fprintf(w, "%s: %.2f round trips and %.2f commands a page\n", what, per(c.Writes), per(cmds))
	for _, m := range []struct {
		label string
		by    map[string]int64
	}{{"commands", c.Cmds}, {"writes holding", c.Batches}} {
		keys := slices.SortedFunc(maps.Keys(m.by), func(a, b string) int {
			if m.by[a] != m.by[b] {
				return int(m.by[b] - m.by[a])
			}
			return strings.Compare(a, b)
		})
		fmt.Fprintf(w, "  %s a page:", m.label)
		for _, k := range keys {
			if v := per(m.by[k]); v >= 0.01 {
				fmt.Fprintf(w, " %s %.2f;", k, v)
			}
		}
		fmt.Fprintln(w)
	}
}
