// Package hostgate is a host's politeness shared by every crawl that reaches it: a
// fleet-wide gate in Redis that a fetcher passes right before it sends a request, so
// that two crawls fetching from one site keep one pace there (the site sees one
// crawler), as the fetchers of one crawl already do through its frontier.
//
// Each crawl asks with its own rule for the host (its delay and concurrency); the gate
// keeps the stricter of the rules asked for recently (the largest delay, the smallest
// concurrency, each for Config.Keep after it was last asked for, so a crawl that ended
// stops constraining the host after a while) and applies it as the frontier applies
// one crawl's rule (spiders.Settings.PerHostDelay): a host with a delay and a
// concurrency limit gets one request at a time, each its delay after the previous one
// ended; without a limit the delay counts from each start.
//
// A granted slot is held under the caller's token until Release, or until its lease
// ends (a fetcher that died never releases). A refused ask answers how long to wait
// before asking again: the time to the host's next start when it is known; while the
// host's slot is taken, its delay (no start can come sooner: the holder must end
// first), or, without a delay, a poll interval (Poll), each cut to the end of the
// soonest lease.
//
// Cost: one key per host (streams.HostGate, a hash tagged by the host, so hosts spread
// over a Redis Cluster's slots and each call touches one), one script call per ask and
// one per release; the fetch stage calls it only for the hosts the fleet says are
// shared (handlers.Options.SharedHosts).
package hostgate
