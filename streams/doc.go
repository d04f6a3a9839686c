// Package streams is streamcrawl's transport on Redis Streams and the crawl's place in
// Redis.
//
// Requests, responses and items are Watermill messages (the wire format of
// watermill-redisstream: fields _watermill_message_uuid, metadata, payload) on one stream
// per kind per crawl partition. Each stage reads its input stream in a consumer group
// through a Subscriber and writes its output through a Publisher. Where each behaviour
// lives:
//
//   - keys.go, layout.go: every key of a crawl (Keys), its partitions (Layout: one hash
//     tag per partition, a host's partition, the count stored at the first open);
//   - subscriber.go, subscription.go: reading in a consumer group, in batches, with a
//     bound on messages in flight; handout.go: entries to the handler and its verdicts; acker.go: acks in batches; retry.go: a nacked entry
//     redelivered after a backoff; reclaim.go: entries of dead consumers taken over;
//     hold.go: a message held while Redis refuses writes; fence.go: what a consumer
//     holds, by time and confirmed in Redis, so a paused one acts on nothing it lost
//     (Held, Holder, ErrNotHeld); orphans.go: entries a lost read reply delivered to us,
//     handed out without waiting for MinIdle;
//   - deadletter.go: poison and over-delivered entries to the dead letters (the entry
//     format is streams/internal/rkit's dead.go);
//   - codec.go: the wire format, and Fail, what a handler's error does to its message;
//   - publisher.go: writes of many goroutines in shared pipelines;
//   - outage.go: Redis refusing writes (out of memory, read-only) waited out, never a
//     reason to drop work; reach.go: Redis lost (a partition, a Redis down or paused)
//     told in a line when it starts and one when it ends, the warnings of the calls
//     that fail meanwhile quieted (Reach);
//   - trim.go: retention (spiders.StreamRetention): what every group acked goes, past
//     the retention, never an entry a group still needs;
//   - backlog.go: the bound on a group's backlog that pauses the fetchers;
//   - counters.go: the crawl's counters, added once a second;
//   - hoststats.go: per-host fetch figures, per minute, only the slowest and failing
//     hosts of each process, in each host's partition, expiring (HostStats);
//   - client.go, cluster.go, sentinel.go: Connect to a Redis, a Redis Cluster, a
//     primary behind Sentinels or an embedded Redis, and the settings that could lose
//     crawl state; AsCluster sees the cluster client through a Client;
//   - durability.go: the wait for replicas (Durability, Client.SetDurability, Durable);
//   - epoch.go: the crawl's epoch and its lost state (ErrStateLost), failovers recorded
//     while writes did not wait for replicas (RecordFailover, ReadFailover);
//     statewatch.go: both noticed while running (StateWatch).
//
// The crawl's frontier is package streams/frontier, its request dedup streams/dedup,
// status, "done" and dead-letter tools streams/inspect, periodic work streams/loop; the
// politeness that crawls reaching one host share is streams/hostgate.
// Components that work in the background have Run(ctx) error and return nil when ctx
// ends. Components that buffer writes (Counters, HostStats, frontier.Frontier) have
// Close(ctx) error: it sends what is queued under ctx's values and deadline (a timeout
// of their own when ctx has none; it still writes when ctx was cancelled, as
// context.WithoutCancel) and returns the error of what it could not send. Publisher and
// Subscriber have Watermill's Close() error instead (Publisher.Shutdown(ctx) is the
// publisher's bounded flush), and Client's Close() error closes connections (io.Closer),
// flushing nothing.
package streams
