package inspect

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// maxLeasesRead bounds the leases blockedScript reads: the requests in flight to hosts
// with a concurrency limit, which the fetchers' windows bound (a few thousand at most in
// practice), never the crawl's size.
const maxLeasesRead = 20000

// blockedScript counts the blocked hosts of a partition: hosts with requests waiting
// that are neither ready nor scheduled because every slot is taken. Only a host with a
// concurrency limit can be blocked, and its slots are its leases, so the hosts are read
// from the leases (the requests in flight), not from the crawl's hosts.
//
// KEYS[1] -> sc:{c}:leases, KEYS[2] -> sc:{c}:ready, KEYS[3] -> sc:{c}:sched
// ARGV[1] -> the host states' prefix (sc:{c}:h:), ARGV[2] -> leases read at most
// Output: the number of blocked hosts
var blockedScript = redis.NewScript(`
local leases = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[2]) - 1)
local seen, n = {}, 0
for _, l in ipairs(leases) do
  local host = string.match(l, '^(.*)|')
  if host and not seen[host] then
    seen[host] = true
    -- requests waiting: a band marked in the host's state (q<band>, see the frontier)
    local waiting = false
    local st = redis.call('HGETALL', ARGV[1] .. host)
    for i = 1, #st, 2 do
      if string.byte(st[i], 1) == 113 and st[i + 1] ~= '0' then waiting = true end
    end
    if waiting and not redis.call('ZSCORE', KEYS[2], host) and not redis.call('ZSCORE', KEYS[3], host) then
      n = n + 1
    end
  end
end
return n
`)

// ReadBlockedHosts sets st.HostsBlocked: the hosts of the crawl with requests waiting
// and every slot taken. One script per partition reading at most maxLeasesRead leases:
// `status` asks for it, the exporter and the dashboard do not.
func ReadBlockedHosts(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, st *Status) error {
	st.HostsBlocked = 0
	for _, k := range l.Parts {
		n, err := readBlockedHosts(ctx, rdb, k)
		if err != nil {
			return err
		}
		st.HostsBlocked += n
	}
	return nil
}

// readBlockedHosts returns the number of blocked hosts of partition k.
func readBlockedHosts(ctx context.Context, rdb redis.UniversalClient, k streams.Keys) (int64, error) {
	n, err := rkit.RunRO(ctx, rdb, blockedScript, []string{k.Leases, k.Ready, k.Sched}, k.HostStates, maxLeasesRead).Int64()
	if err != nil {
		return 0, fmt.Errorf("inspect: blocked hosts: %w", err)
	}
	return n, nil
}
