// Package streams is streamcrawl's transport on Redis Streams.
//
// Requests, responses and items are Watermill messages (the wire format of
// watermill-redisstream: fields _watermill_message_uuid, metadata, payload) on one stream
// per kind per crawl partition. Each stage reads its input stream in a consumer group
// through a Subscriber that reads and acks in batches, reclaims the entries of dead
// consumers with XAUTOCLAIM and moves poison entries to dead letters, and writes its
// output through a Publisher that pipelines concurrent XADDs into one round trip.
// Trim removes what every group has acked, past retention. Connect opens a Redis or a
// Redis Cluster and checks its settings.
//
// The crawl's state beside the streams (keys, dedup, the host-scheduled frontier,
// progress and status) is package streams/frontier.
package streams
