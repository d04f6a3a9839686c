//go:build race

package cli

// raceEnabled reports that the tests run with the race detector (about 5-10x slower),
// so that the heaviest tests can crawl a smaller site.
const raceEnabled = true
