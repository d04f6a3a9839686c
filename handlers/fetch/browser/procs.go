package browser

import "time"

// Process is one process of the system, as /proc/<pid>/stat describes it.
type Process struct {
	// PID and PPID are the process's ID and its parent's.
	PID, PPID int
	// Comm is the process's name (at most 15 bytes, as the kernel keeps it).
	Comm string
	// State is its state letter: R, S, D, Z (a zombie), ...
	State byte
	// CPU is the user and system time it has used.
	CPU time.Duration
}

// Descendants returns the roots found among procs and their descendants, roots first.
func Descendants(procs []Process, roots ...int) []int {
	children := map[int][]int{}
	present := map[int]bool{}
	for _, p := range procs {
		children[p.PPID] = append(children[p.PPID], p.PID)
		present[p.PID] = true
	}
	var out []int
	for _, r := range roots {
		if present[r] {
			out = append(out, r)
		}
	}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// IsChromium reports whether a process name is one of Chromium's (its browser,
// renderers, zygotes, crash handlers; Chrome's headless_shell).
func IsChromium(comm string) bool {
	return len(comm) >= 6 && (comm[:6] == "chrome" || comm[:6] == "chromi" || comm == "headless_shell")
}
