package frontier

import "github.com/streamcrawl/streamcrawl/streams/inspect"

// Status, progress, dead letters and reset moved to package streams/inspect; these
// names stay until the callers outside streams/ follow.

type (
	// Status is inspect.Status.
	Status = inspect.Status
	// StreamStatus is inspect.StreamStatus.
	StreamStatus = inspect.StreamStatus
	// GroupStatus is inspect.GroupStatus.
	GroupStatus = inspect.GroupStatus
	// PartitionStatus is inspect.PartitionStatus.
	PartitionStatus = inspect.PartitionStatus
	// NodeStatus is inspect.NodeStatus.
	NodeStatus = inspect.NodeStatus
	// Progress is inspect.Progress.
	Progress = inspect.Progress
	// StageProgress is inspect.StageProgress.
	StageProgress = inspect.StageProgress
	// DeadLetter is inspect.DeadLetter.
	DeadLetter = inspect.DeadLetter
)

var (
	// ReadStatus is inspect.ReadStatus.
	ReadStatus = inspect.ReadStatus
	// ReadNodes is inspect.ReadNodes.
	ReadNodes = inspect.ReadNodes
	// ReadProgress is inspect.ReadProgress.
	ReadProgress = inspect.ReadProgress
	// Reset is inspect.Reset.
	Reset = inspect.Reset
	// ListDead is inspect.ListDead.
	ListDead = inspect.ListDead
	// GetDead is inspect.GetDead.
	GetDead = inspect.GetDead
	// Requeue is inspect.Requeue.
	Requeue = inspect.Requeue
	// PurgeDead is inspect.PurgeDead.
	PurgeDead = inspect.PurgeDead
	// DueHosts is inspect.DueHosts.
	DueHosts = inspect.DueHosts
)
