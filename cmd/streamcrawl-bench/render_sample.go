package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// treeSampler measures the processes under some roots (a crawler's processes and
// the browsers they start) from /proc: their CPU time (the last value seen of each
// process, so that processes that end still count up to their last sample) and the
// memory of the browser processes among them (PSS and RSS summed, peak and series).
type treeSampler struct {
	roots []int
	every time.Duration

	mu       sync.Mutex
	cpu      map[int]float64 // seconds, by pid
	peakPSS  int64
	peakRSS  int64
	series   []memSample
	progress func() int64 // pages done, for the series; nil: not kept
	stop     chan struct{}
	done     chan struct{}
}

// memSample is the browsers' memory when a number of pages were done.
type memSample struct {
	at       time.Duration
	pages    int64
	pss, rss int64
	browsers int
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
const clockTicks = 100

func newTreeSampler(every time.Duration, progress func() int64, roots ...int) *treeSampler {
	s := &treeSampler{roots: roots, every: every, cpu: map[int]float64{}, progress: progress,
		stop: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.sample(time.Since(start))
			select {
			case <-s.stop:
				s.sample(time.Since(start))
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// finish stops sampling and returns the CPU seconds of every process seen.
func (s *treeSampler) finish() float64 {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	var total float64
	for _, c := range s.cpu {
		total += c
	}
	return total
}

type procStat struct {
	ppid int
	comm string
	cpu  float64
}

func (s *treeSampler) sample(at time.Duration) {
	all := map[int]procStat{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || close < open {
			continue
		}
		f := bytes.Fields(b[close+1:])
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		ut, _ := strconv.ParseFloat(string(f[11]), 64)
		st, _ := strconv.ParseFloat(string(f[12]), 64)
		all[pid] = procStat{ppid: ppid, comm: string(b[open+1 : close]), cpu: (ut + st) / clockTicks}
	}
	children := map[int][]int{}
	for pid, p := range all {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var tree []int
	for _, r := range s.roots {
		if _, ok := all[r]; ok {
			tree = append(tree, r)
		}
	}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	var pss, rss int64
	browsers := 0
	s.mu.Lock()
	for _, pid := range tree {
		p := all[pid]
		s.cpu[pid] = max(s.cpu[pid], p.cpu)
		if isBrowserComm(p.comm) {
			ps, rs := memoryOf(pid)
			pss += ps
			rss += rs
			if all[p.ppid].comm != p.comm && !strings.Contains(p.comm, "crashpad") { // a browser's main process
				browsers++
			}
		}
	}
	s.peakPSS, s.peakRSS = max(s.peakPSS, pss), max(s.peakRSS, rss)
	if s.progress != nil {
		s.series = append(s.series, memSample{at: at, pages: s.progress(), pss: pss, rss: rss, browsers: browsers})
	}
	s.mu.Unlock()
}

func isBrowserComm(comm string) bool {
	return len(comm) >= 6 && (comm[:6] == "chromi" || comm[:6] == "chrome" || comm == "headless_shell")
}

// memoryOf returns a process's PSS and RSS in bytes.
func memoryOf(pid int) (pss, rss int64) {
	dir := "/proc/" + strconv.Itoa(pid)
	if b, err := os.ReadFile(dir + "/smaps_rollup"); err == nil {
		pss = kbField(b, "Pss:")
		rss = kbField(b, "Rss:")
	}
	return pss, rss
}

func kbField(b []byte, name string) int64 {
	i := bytes.Index(b, []byte(name))
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+len(name):])
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(string(f[0]), 10, 64)
	return n << 10
}
