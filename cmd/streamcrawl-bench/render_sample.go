package main

import (
	"strings"
	"sync"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fetch/browser"
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

func (s *treeSampler) sample(at time.Duration) {
	procs := browser.Processes()
	byPID := make(map[int]browser.Process, len(procs))
	for _, p := range procs {
		byPID[p.PID] = p
	}
	var pss, rss int64
	browsers := 0
	s.mu.Lock()
	for _, pid := range browser.Descendants(procs, s.roots...) {
		p := byPID[pid]
		s.cpu[pid] = max(s.cpu[pid], p.CPU.Seconds())
		if browser.IsChromium(p.Comm) {
			ps, rs := browser.Memory(pid)
			pss += ps
			rss += rs
			if byPID[p.PPID].Comm != p.Comm && !strings.Contains(p.Comm, "crashpad") { // a browser's main process
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
