// Package inspect reads a crawl's state in Redis for people and tools, and repairs it:
//
//   - progress.go: "done" (ReadProgress, Progress.Done): frontier and retries empty and
//     every stage group with nothing pending or unread, read in one atomic script per
//     partition (twice, and compared, for a partitioned crawl);
//   - status.go: what `streamcrawl status`, the dashboard and the metrics show
//     (ReadStatus: streams, groups, frontier, dedup, memory, partitions, cluster nodes;
//     DueHosts), from counters the data path keeps, never a scan of the queues;
//   - dead.go: the dead letters (ListDead, GetDead, Requeue, PurgeDead), as
//     streams/internal/rkit writes them;
//   - reset.go: Reset, every key of a crawl gone;
//   - info.go: InfoNumbers, the numeric fields of INFO.
//
// Nothing here runs on the crawl's data path: a crawl runs without it.
package inspect
