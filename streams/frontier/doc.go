// Package frontier is a crawl's host-scheduled frontier in Redis (the Mercator /
// URLFrontier shape): every host with waiting requests has its own queue, and only
// requests of hosts that may start one now enter the requests stream. One Frontier
// (New, with one Config) serves every part of a process: the parse stage's Emit, the
// fetch stage's Run, Finish and Retry, the seed poller's TakeSeeds.
//
// Where each behaviour lives:
//
//   - emit.go, emit_flush.go, emit_lua.go, emit_items_lua.go: a page's new requests
//     and items in one script per partition (dedup and enqueue in one step): Emit splits
//     a page into shares, flush runs the shares of the pages parsed at about the same
//     time, emit_lua.go composes the script and emit_items_lua.go is its items part;
//   - hostsched_lua.go: the host scheduler in Lua (ready set, schedule, leases, hand
//     out) and the one prologue (schedKeys, schedArgs) of the five scripts using it;
//   - dispatch.go: Run's dispatch rounds, requests of ready hosts into the stream
//     within the Window;
//   - hosts.go, hosts_finish.go: politeness, the fetchers' side (Finish gives a slot
//     back and schedules the host's next start; Leased, SetCrawlDelay);
//   - retries.go: Retry and the due-retry mover, on the Redis clock;
//   - seeds.go: seeds pushed at runtime (TakeSeeds) and the start-URL key's type;
//   - migrate.go: a frontier from before host queues, into host queues;
//   - order.go: the order requests are handed out in; seencache.go: fingerprints known
//     in process to be seen;
//   - revisit.go: the revisit schedule (settings.revisit.rules; Config.Revisit, the
//     seenat hash of settings.revisit.after, is in frontier.go and emit_lua.go): package
//     spiders, "Revisits", maps every piece of revisits.
//
// Hosts are keys (spiders.HostKey): the frontier compares them as they come. Keys and
// partitions are package streams' (keys.go, layout.go); the request dedup is package
// streams/dedup; "done", status and dead letters are package streams/inspect. Every
// change that must not be half-done is one Lua script touching one partition's slot.
package frontier
