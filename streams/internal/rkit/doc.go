// Package rkit is the Redis plumbing that streams, streams/frontier, streams/dedup and
// streams/inspect share, each idiom once:
//
//   - group.go: the group commit (Group): items of many goroutines in shared batches,
//     under the publisher, the emit queue, the finisher of host turns and the per-host
//     and retry pipelines; pipeline.go runs a batch's commands and script calls in one
//     pipeline, a script the server lost (NOSCRIPT) again with EVAL;
//   - lua.go: the Lua fragments scripts of several packages share (the Redis clock,
//     the Watermill XADD, stream IDs, consumer groups, unread entries);
//   - dead.go: the dead-letter entry, written here only (dead() in Lua, Dead.Values
//     from Go); streams/inspect reads it;
//   - seeds.go: the start-URL key's type check and the count of seeds waiting;
//   - readonly.go: RunRO, a reading script run as EVALSHA_RO (what a read-only ACL user
//     may run), with the fallback for servers that cannot (before Redis 7, miniredis);
//   - scan.go: SCAN over every primary; basics.go: reply checks.
//
// Periodic work, back-off and rate-limited error logs are in streams/loop.
package rkit
