package metrics

import (
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// descReady is the gauge an autoscaler scales each stage on (KEDA's Prometheus scaler:
// compose/k8s/keda.yaml). Not XINFO lag: Redis reports a group's lag as unknown, or
// wrong, once entries were deleted or trimmed (streamcrawl trims), and a scaler reading
// it sticks high.
var descReady = desc("ready_work", "Work ready for a stage: for fetch the requests waiting in the frontier and those dispatched but not read yet, "+
	"for parse the pages fetched and not parsed yet, for store the items emitted and not stored, dropped or found duplicate yet "+
	"(from the frontier and the crawl's counters; only the requests dispatched to the stream and unread come from the fetch group's lag).", "crawl", "stage")

// ReadyWork returns the work ready for each stage (fetch, parse, store), from the
// crawl's status and frontier: the frontier's own count plus the requests dispatched
// and not yet read for fetch (the fetch group's lag, the whole stream before the group
// exists; a lag Redis cannot tell counts 0), and differences
// of the counters the stages keep for parse (pages_fetched - bodies_not_text -
// pages_parsed) and store (items_scraped - items_stored - items_duplicate -
// items_dropped). Counters are flushed by each process every second or so, so a
// figure can be a second behind; none is below 0.
func ReadyWork(st *inspect.Status, f Frontier) map[string]int64 {
	s := st.Stats
	return map[string]int64{
		streams.StageFetch: f.Requests + unread(st, "requests", streams.StageFetch),
		streams.StageParse: max(s["pages_fetched"]-s["bodies_not_text"]-s["pages_parsed"], 0),
		streams.StageStore: max(s["items_scraped"]-s["items_stored"]-s["items_duplicate"]-s["items_dropped"], 0),
	}
}

// unread returns the entries of the stream of kind (requests, responses, items) that
// group has not read: its lag, the stream's length while the group does not exist, 0
// when Redis cannot tell.
func unread(st *inspect.Status, kind, group string) int64 {
	for _, s := range st.Streams {
		if streamKind(s.Name) != kind {
			continue
		}
		for _, g := range s.Groups {
			if g.Name == group {
				return max(g.Lag, 0)
			}
		}
		return s.Length
	}
	return 0
}
