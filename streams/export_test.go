package streams

import (
	"context"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

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

// Look runs one of the Backlog's looks. It exists in test builds only.
func (b *Backlog) Look(ctx context.Context) (int64, bool) { return b.look(ctx) }
