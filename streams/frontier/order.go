package frontier

import "fmt"

// order is the order in which the frontier hands out requests (Config.Order).
type order string

// Orders of the frontier. Within one band requests keep their order of discovery
// (depth-first: the newest first).
const (
	// orderPriority: higher priority first (the default).
	orderPriority order = "priority"
	// orderBreadthFirst: shallower first, then higher priority.
	orderBreadthFirst order = "breadth-first"
	// orderDepthFirst: deeper first, newest first.
	orderDepthFirst order = "depth-first"
)

// Bounds on priority and depth: a score is band×1e9 + a sequence number (mod 1e9) and
// must stay exact in a float64 (below 2^53).
const (
	maxPriority = 1000
	maxDepth    = 1000
)

// validate reports an unknown order.
func (o order) validate() error {
	switch o {
	case orderPriority, orderBreadthFirst, orderDepthFirst:
		return nil
	}
	return fmt.Errorf("frontier: unknown order %q (want priority, breadth-first or depth-first)", o)
}

// band returns the score band of a request: lower bands are dispatched first.
func (o order) band(priority, depth int) int {
	priority = max(-maxPriority, min(maxPriority, priority))
	depth = max(0, min(maxDepth, depth))
	switch o {
	case orderBreadthFirst:
		return depth*(2*maxPriority+1) - priority
	case orderDepthFirst:
		return -depth
	default:
		return -priority
	}
}

// sign is +1 for first-in-first-out within a band, -1 for last-in-first-out.
func (o order) sign() int {
	if o == orderDepthFirst {
		return -1
	}
	return 1
}
