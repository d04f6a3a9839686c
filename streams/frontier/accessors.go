package frontier

import "github.com/redis/go-redis/v9"

// Client returns the Redis client of the frontier.
func (f *Frontier) Client() redis.UniversalClient { return f.rdb }

// Client returns the Redis client of the hosts' state.
func (h *Hosts) Client() redis.UniversalClient { return h.rdb }

// Layout returns the crawl's layout.
func (h *Hosts) Layout() Layout { return h.layout }
