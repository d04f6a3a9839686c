package browser

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"
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

// proc is one line of /proc/<pid>/stat.
type proc struct {
	pid, ppid int
	comm      string
	state     byte
}

// readProcs returns every process of the system.
func readProcs() []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]proc, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || close < open || close+4 > len(b) {
			continue
		}
		fields := bytes.Fields(b[close+2:])
		if len(fields) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(string(fields[1]))
		out = append(out, proc{pid: pid, ppid: ppid, comm: string(b[open+1 : close]), state: fields[0][0]})
	}
	return out
}

// tree returns pid and its descendants among procs.
func tree(procs []proc, pid int) []int {
	children := map[int][]int{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// treeMemory returns the proportional set size, in bytes, of pid and its descendants
// (resident memory with each shared page divided among the processes sharing it;
// RSS when the kernel has no smaps_rollup).
func treeMemory(pid int) int64 {
	var total int64
	for _, p := range tree(readProcs(), pid) {
		total += processMemory(p)
	}
	return total
}

func processMemory(pid int) int64 {
	dir := "/proc/" + strconv.Itoa(pid)
	if b, err := os.ReadFile(dir + "/smaps_rollup"); err == nil {
		if kb, ok := field(b, "Pss:"); ok {
			return kb << 10
		}
	}
	if b, err := os.ReadFile(dir + "/status"); err == nil {
		if kb, ok := field(b, "VmRSS:"); ok {
			return kb << 10
		}
	}
	return 0
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

// isChromeComm reports the process names Chromium's processes have.
func isChromeComm(comm string) bool {
	return len(comm) >= 6 && (comm[:6] == "chrome" || comm[:6] == "chromi" || comm == "headless_shell")
}

// reapOrphans reaps the zombie children of this process that are Chromium's orphans
// (not a browser chromedp waits for), and returns how many.
func reapOrphans() int {
	self := os.Getpid()
	n := 0
	mains.Lock()
	defer mains.Unlock()
	for _, p := range readProcs() {
		if p.ppid != self || p.state != 'Z' || !isChromeComm(p.comm) || mains.pids[p.pid] {
			continue
		}
		var ws syscall.WaitStatus
		if got, err := syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil); err == nil && got == p.pid {
			n++
		}
	}
	return n
}
