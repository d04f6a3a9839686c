package browser

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Browsers leave processes behind: Chromium's zygotes and helpers outlive a browser
// that is killed (and a graceful close does not wait for them), and become orphans.
// Their new parent must reap them, or they stay as zombies; in a container whose init
// does not reap (or with no init), a week of crawling leaves thousands. So the first
// pool that starts a browser makes this process a child subreaper
// (PR_SET_CHILD_SUBREAPER): the orphans of its browsers come to it, and the pool reaps
// those that are Chromium's (reapOrphans), never a process another part of the
// program waits for.

const prSetChildSubreaper = 36

var subreaperOnce sync.Once

// becomeSubreaper makes this process the reaper of its descendants' orphans.
func becomeSubreaper() {
	subreaperOnce.Do(func() {
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0) //nolint:errcheck // best effort: without it init reaps
	})
}

// mains are the PIDs of the browser processes started and not yet waited for by
// chromedp (it reaps them itself).
var mains = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

func addMain(pid int) {
	mains.Lock()
	mains.pids[pid] = true
	mains.Unlock()
}

func removeMain(pid int) {
	mains.Lock()
	delete(mains.pids, pid)
	mains.Unlock()
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
const clockTicks = 100

// Processes returns every process of the system (nil where there is no /proc). The
// pool reads it to measure and reap its browsers; tests and benchmarks read it to count
// and measure them.
func Processes() []Process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]Process, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime(14) stime(15); comm may hold spaces and parentheses.
		open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || close < open || close+4 > len(b) {
			continue
		}
		f := bytes.Fields(b[close+2:])
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		ut, _ := strconv.ParseInt(string(f[11]), 10, 64)
		st, _ := strconv.ParseInt(string(f[12]), 10, 64)
		out = append(out, Process{PID: pid, PPID: ppid, Comm: string(b[open+1 : close]), State: f[0][0],
			CPU: time.Duration(ut+st) * time.Second / clockTicks})
	}
	return out
}

// treeMemory returns the proportional set size, in bytes, of pid and its descendants
// (resident memory with each shared page divided among the processes sharing it;
// RSS when the kernel has no smaps_rollup).
func treeMemory(pid int) int64 {
	var total int64
	for _, p := range Descendants(Processes(), pid) {
		pss, rss := Memory(p)
		if pss == 0 {
			pss = rss
		}
		total += pss
	}
	return total
}

// Memory returns a process's proportional and resident set sizes in bytes (0 for what
// the kernel does not say). PSS divides each shared page among the processes sharing it.
func Memory(pid int) (pss, rss int64) {
	dir := "/proc/" + strconv.Itoa(pid)
	if b, err := os.ReadFile(dir + "/smaps_rollup"); err == nil {
		pss, _ = field(b, "Pss:")
		rss, _ = field(b, "Rss:")
		return pss << 10, rss << 10
	}
	if b, err := os.ReadFile(dir + "/status"); err == nil {
		rss, _ = field(b, "VmRSS:")
	}
	return 0, rss << 10
}

// field returns the number after name in a /proc file of "Name: value kB" lines.
func field(b []byte, name string) (int64, bool) {
	i := bytes.Index(b, []byte("\n"+name))
	if i < 0 {
		if !bytes.HasPrefix(b, []byte(name)) {
			return 0, false
		}
		i = -1
	}
	rest := b[i+1+len(name):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	f := bytes.Fields(rest)
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(f[0]), 10, 64)
	return n, err == nil
}

// reapOrphans reaps the zombie children of this process that are Chromium's orphans
// (not a browser chromedp waits for), and returns how many.
func reapOrphans() int {
	self := os.Getpid()
	n := 0
	mains.Lock()
	defer mains.Unlock()
	for _, p := range Processes() {
		if p.PPID != self || p.State != 'Z' || !IsChromium(p.Comm) || mains.pids[p.PID] {
			continue
		}
		var ws syscall.WaitStatus
		if got, err := syscall.Wait4(p.PID, &ws, syscall.WNOHANG, nil); err == nil && got == p.PID {
			n++
		}
	}
	return n
}

// settleOrphans reaps this process's Chromium orphans as they exit, until none is left
// or timeout passes. Only the last pool to close calls it: while a pool runs, the crash
// handlers of its browsers are orphans of this process too, alive as long as their
// browser.
func settleOrphans(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		reapOrphans()
		if !hasOrphans() || time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hasOrphans reports whether a Chromium process (alive or a zombie) other than a
// browser chromedp waits for has this process as its parent.
func hasOrphans() bool {
	self := os.Getpid()
	mains.Lock()
	defer mains.Unlock()
	for _, p := range Processes() {
		if p.PPID == self && IsChromium(p.Comm) && !mains.pids[p.PID] {
			return true
		}
	}
	return false
}

// killTree kills pid and its descendants at once (SIGKILL), parents first: a browser
// killed alone leaves its renderers running until they notice, and the renderer is
// what grows.
func killTree(pid int) {
	for _, p := range Descendants(Processes(), pid) {
		syscall.Kill(p, syscall.SIGKILL) //nolint:errcheck // one that is gone already is fine
	}
}
