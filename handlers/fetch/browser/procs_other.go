//go:build !linux

package browser

import "time"

// Without /proc and subreapers: memory is not measured and nothing is reaped here.

func becomeSubreaper()            {}
func addMain(int)                 {}
func removeMain(int)              {}
func treeMemory(int) int64        { return 0 }
func reapOrphans() int            { return 0 }
func killTree(int)                {}
func settleOrphans(time.Duration) {}

// Processes returns nil: there is no /proc to read here.
func Processes() []Process { return nil }

// Memory returns 0, 0: there is no /proc to read here.
func Memory(int) (pss, rss int64) { return 0, 0 }
