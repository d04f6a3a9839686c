// Package streams is streamcrawl's transport on Redis Streams.
//
// Requests, responses and items are Watermill messages (the wire format of
// watermill-redisstream: fields _watermill_message_uuid, metadata, payload) on one stream
// per kind per crawl partition. Each stage reads its input stream in a consumer group
// through a Subscriber that reads and acks in batches, reclaims the entries of dead
// consumers with XAUTOCLAIM and moves poison entries to dead letters, and writes its
// output through a Publisher that pipelines concurrent XADDs into one round trip.
// Trim (and a Trimmer, periodically) removes what every group has acked, past
// retention; a Backlog watches a group's backlog for a Subscriber's Gate; Counters
// batch the crawl's stats; an Outage holds writers while Redis refuses them. Connect
// opens a Redis, a Redis Cluster or an embedded Redis and checks its settings;
// InfoNumbers reads INFO. Long-running parts have Run(ctx) error.
//
// The crawl's state beside the streams (keys, dedup, the host-scheduled frontier,
// progress and status) is package streams/frontier.
package streams
