package streams

import "github.com/streamcrawl/streamcrawl/streams/internal/rkit"

// Test access to unexported parts (test builds only).
var (
	ParseClusterURL = parseClusterURL
	Trim            = trim
	TrimBytes       = trimBytes
	DeadOf          = deadOf
	IsWriteRefused  = isWriteRefused
	CheckEpoch      = checkEpoch
	ErrWriteRefused = errWriteRefused
)

// The dead-letter fields the subscriber tests read.
const (
	DeadFieldError      = rkit.DeadError
	DeadFieldDeliveries = rkit.DeadDeliveries
	DeadFieldStage      = rkit.DeadStage
)

// HostStatsWindow is the length of a window of per-host figures.
const HostStatsWindow = hostStatsWindow

// HostStatsKey is the hash of the per-host figures of one window of k's partition.
func HostStatsKey(k Keys, window int64) string { return k.hostStatsWindow(window) }
