package metrics

import (
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// Frontier is what the crawl collector shows of a crawl's frontier.
type Frontier struct {
	// Requests waiting to be dispatched into the requests stream.
	Requests int64
	// Delayed requests waiting for a retry or politeness time.
	Delayed int64
	// DueHosts is the number of hosts that may start a request now.
	DueHosts int64
}

// FrontierOf returns a crawl's frontier figures from its status. Every read of frontier
// figures by this package goes through here, so that a new frontier layout needs only
// this function changed.
func FrontierOf(st *inspect.Status) Frontier {
	return Frontier{Requests: st.Frontier, Delayed: st.Delayed, DueHosts: st.HostsDue}
}
