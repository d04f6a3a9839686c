//go:build !linux

package browser

// Without /proc and subreapers: memory is not measured and nothing is reaped here.

func becomeSubreaper()     {}
func addMain(int)          {}
func removeMain(int)       {}
func treeMemory(int) int64 { return 0 }
func reapOrphans() int     { return 0 }
