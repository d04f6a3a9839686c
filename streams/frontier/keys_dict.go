package frontier

import "github.com/redis/go-redis/v9"

// Dicts is the hash of the crawl's response dictionaries: field "current" holds the ID
// of the one to compress new responses with, field <id> each dictionary (zstd format).
// In the global keys of a partitioned crawl.
func (k Keys) Dicts() string { return k.key("dicts") }

// Client returns the Redis client of the frontier.
func (f *Frontier) Client() redis.UniversalClient { return f.rdb }

// Client returns the Redis client of the hosts' state.
func (h *Hosts) Client() redis.UniversalClient { return h.rdb }

// Layout returns the crawl's layout.
func (h *Hosts) Layout() Layout { return h.layout }
