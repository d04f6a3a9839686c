// Package frontier is a crawl's state in Redis beside its streams: where its keys live
// (Keys, Layout: one hash-tagged partition per slot), which URLs it has seen (Deduper:
// exact, Bloom or a set), and the host-scheduled frontier that decides what the fetchers
// get next (Frontier: dedup and enqueue; Dispatcher: hand-out of the requests of hosts
// that may start one now; Hosts: the fetchers' side of per-host politeness; Delayed:
// retries), with runtime seeds, progress ("done") and status.
//
// Every change that must not be half-done is one Lua script touching one slot; the
// Lua fragments several scripts share live in lua_shared.go and hostsched_lua.go. Keys
// come from Keys, never built inline. The transport the stages read and write through
// (subscriber, publisher, acks, reclaims, dead letters, trimming) is package streams.
package frontier
