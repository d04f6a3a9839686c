package metrics

import (
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// descReady is the gauge an autoscaler scales each stage on (KEDA's Prometheus scaler:
// compose/k8s/keda.yaml). For parse and store not XINFO lag: Redis reports a group's
// lag as unknown, or wrong, once entries were deleted or trimmed (streamcrawl trims
// responses and items), and a scaler reading it sticks high.
var descReady = desc("ready_work", "Work a new process of the stage could start at once: for fetch the requests the frontier released "+
	"(their host may start one) that no fetcher has read, for parse the pages fetched and not parsed yet, for store the items "+
	"emitted and not stored, dropped or found duplicate yet.", "crawl", "stage")

// ReadyWork returns the work ready for each stage (fetch, parse, store), from the
// crawl's status. For fetch: the requests in the requests stream the fetch group has
// not read (its lag; the whole stream before the group exists; 0 when Redis cannot
// tell): the frontier releases only requests whose host may start one now, so these
// are work a new fetcher could start, where the frontier's own count includes hosts
// that must wait. For parse and store, differences of the counters the stages keep,
// which trimming and deletes do not disturb: pages_fetched - bodies_not_text -
// pages_parsed, and items_scraped - items_stored - items_duplicate - items_dropped.
// Each process flushes its counters about once a second, so these can be a second
// behind; none is below 0.
func ReadyWork(st *inspect.Status) map[string]int64 {
	s := st.Stats
	return map[string]int64{
		streams.StageFetch: unread(st, "requests", streams.StageFetch),
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
