package fleet

// shares returns each active crawl's share of a worker's concurrency: in proportion to
// its weight against the sum of the active crawls' weights, at least 1. A run keeps the
// share it started with (its fetch, parse and store stages take at most that many
// messages in flight) until the active set moves it by 2x or more (moved): then the
// run is restarted with the new share. A crawl with a million waiting URLs thus takes
// its weight's part of every worker, not all of it, and a small one submitted beside it
// gets its part within one registry read.
func shares(active map[string]Crawl, concurrency int) map[string]int {
	sum := 0
	for _, c := range active {
		sum += max(1, c.Weight)
	}
	out := make(map[string]int, len(active))
	for name, c := range active {
		out[name] = max(1, concurrency*max(1, c.Weight)/sum)
	}
	return out
}

// moved reports whether a run's share has moved far enough (2x or more, either way)
// to restart the run with the new one: a smaller move is not worth the restart.
func moved(had, now int) bool {
	return now >= 2*had || had >= 2*now
}
