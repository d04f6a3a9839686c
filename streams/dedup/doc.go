// Package dedup is a crawl's request dedup in Redis: which request fingerprints the
// crawl has queued, kept in one of three modes fixed for the crawl's life (Config,
// stored in its meta hash by the first Open):
//
//   - exact (exact.go): every fingerprint, in small hashes Redis keeps as compact
//     listpacks (about 22 bytes per URL); never drops a new URL;
//   - bloom (bloom.go, bloom_lua.go): a scalable Bloom filter on Redis bitmaps driven
//     by Lua, or RedisBloom's BF.* where the server has them (about 1.3 bytes per URL
//     at 1%); a false positive drops a URL never crawled;
//   - set: one Redis set, as crawls started before the modes keep.
//
// Each partition of a crawl has its own buckets or filters in its own slot. A Deduper
// (deduper.go) records fingerprints from Go (Add, Has) and gives the same logic as Lua
// (Lua, ScriptArg) for scripts that also enqueue: the frontier's emit script
// marks a URL seen and queues it in one step. Usage (usage.go) measures what the
// dedup holds. With Config.ExpireAfter (expire.go) exact and bloom modes keep the
// fingerprints in generations, so that a URL seen long enough ago is new again: the
// spider's settings.revisit.forget_after (package spiders, "Revisits", maps every
// piece of revisits).
package dedup
