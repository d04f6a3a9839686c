package streams

import "github.com/streamcrawl/streamcrawl/streams/internal/rkit"

// Test access to unexported parts (test builds only).
var (
	ParseClusterURL = parseClusterURL
	Trim            = trim
	TrimBytes       = trimBytes
	DeadOf          = deadOf
	IsWriteRefused  = isWriteRefused
	ErrWriteRefused = errWriteRefused
)

// The dead-letter fields the subscriber tests read.
const (
	DeadFieldError      = rkit.DeadError
	DeadFieldDeliveries = rkit.DeadDeliveries
	DeadFieldStage      = rkit.DeadStage
)
