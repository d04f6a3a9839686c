package frontier

import "fmt"

// Order is the order in which the frontier hands out requests.
type Order string

// Orders of the frontier. Within one band requests keep their order of discovery
// (depth-first: the newest first).
const (
	// OrderPriority: higher priority first (the default).
	OrderPriority Order = "priority"
	// OrderBreadthFirst: shallower first, then higher priority.
	OrderBreadthFirst Order = "breadth-first"
	// OrderDepthFirst: deeper first, newest first.
	OrderDepthFirst Order = "depth-first"
)

// Bounds on priority and depth: a score is band×1e9 + a sequence number (mod 1e9) and
// must stay exact in a float64 (below 2^53).
const (
	MaxPriority = 1000
	maxDepth    = 1000
)

// Validate reports an unknown order.
func (o Order) Validate() error {
	switch o {
	case OrderPriority, OrderBreadthFirst, OrderDepthFirst:
		return nil
	}
	return fmt.Errorf("frontier: unknown order %q (want priority, breadth-first or depth-first)", o)
}

// band returns the score band of a request: lower bands are dispatched first.
func (o Order) band(priority, depth int) int {
	priority = max(-MaxPriority, min(MaxPriority, priority))
	depth = max(0, min(maxDepth, depth))
	switch o {
	case OrderBreadthFirst:
		return depth*(2*MaxPriority+1) - priority
	case OrderDepthFirst:
		return -depth
	default:
		return -priority
	}
}

// sign is +1 for first-in-first-out within a band, -1 for last-in-first-out.
func (o Order) sign() int {
	if o == OrderDepthFirst {
		return -1
	}
	return 1
}
