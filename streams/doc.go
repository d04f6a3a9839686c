// Package streams is streamcrawl's transport and frontier on Redis Streams.
//
// Requests, responses and items are Watermill messages (the wire format of
// watermill-redisstream: fields _watermill_message_uuid, metadata, payload) on one stream
// per kind per crawl. Each stage reads its input stream in a consumer group through a
// Subscriber that reads and acks in batches, and writes its output through a Publisher that
// pipelines concurrent XADDs into one round trip. The Frontier deduplicates requests and
// enqueues them in one Lua script, so a URL is never marked seen without being queued.
//
// Every key comes from Keys, hash-tagged by crawl name (sc:{shop}:requests), so all keys of
// one crawl live in one Redis Cluster slot and every script touches one slot.
package streams
