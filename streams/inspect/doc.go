// Package inspect reads a crawl's state in Redis for people and tools, and repairs it:
//
//   - progress.go: "done" (ReadProgress, Progress.Done): frontier and retries empty,
//     every stage group with nothing pending or unread, and for a continuous crawl no
//     revisit due within its idle window, read in one atomic script per
//     partition (twice, and compared, for a partitioned crawl);
//   - status.go: what `streamcrawl status`, the dashboard and the metrics show
//     (ReadStatus: streams, groups, frontier, dedup, memory, partitions, cluster nodes;
//     DueHosts; RecordedRetention), from counters the data path keeps, never a scan of
//     the queues;
//   - dead.go: the dead letters, over every partition (ListDead, RetryDead, PurgeDead),
//     as streams/internal/rkit writes them;
//   - groups.go: consumer groups of their own (replays, post-processors, archivers):
//     where one stands (ReadGroupState), where a new one starts (ParsePosition,
//     GroupStart, CreateGroup), and the crawl's own stage groups refused
//     (ErrStageGroup);
//   - reset.go: Reset, every key of a crawl gone, refused while its services run, and
//     CountKeys, how many keys it would delete (a scan, as Reset's);
//   - alive.go: Alive, the consumers of a crawl's groups active lately (ErrRunning);
//   - deep.go: ReadDeep, the dedup's exact keys and bytes (`status --deep`): a paced
//     scan, at most once a minute per crawl;
//   - crawls.go: whether a crawl exists (RequireCrawl, which every command
//     given a crawl's name asks first) and the crawls a Redis holds (ListCrawls, for the
//     NoCrawlError only: a scan);
//   - blocked.go: the hosts with every slot taken, for status, read from the leases and the hosts' states;
//   - info.go: InfoNumbers, the numeric fields of INFO;
//   - continuous.go: a crawl's continuous mode (SetContinuous; ReadProgress reads it), which
//     makes Progress.Done wait for revisits due within its idle window;
//   - revisits.go: ReadRevisits, the revisit schedule by when it is due (status) (both:
//     package spiders, "Revisits", maps every piece of revisits);
//   - render.go: what render: auto decided per page type (Status.Render);
//   - budget.go: the hosts (or domains) that used the most of the crawl's budget
//     (Status.Budget).
//
// No stage needs it to move a message: runs read ReadProgress to know when to stop,
// replays and post-processors the groups, people the rest.
package inspect
