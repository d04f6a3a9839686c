// Package dashboard serves a crawl's web dashboard: one page with live charts of its
// rates, queues, stage backlogs and Redis memory, the slowest and most failing hosts,
// and the dead letters with a button that re-queues them (handlers.RetryDead, the code
// behind `streamcrawl dead retry`). The page and its script are embedded in the binary;
// nothing is built or downloaded to run it. The page is rendered on the server with the
// latest figures, so it shows them before its script runs.
//
// Without a crawl (Config.Crawl empty) it serves a fleet page instead (fleet.go): every
// crawl registered with the fleet (handlers/fleet) with its state and figures, pause and
// resume buttons, and each crawl's own page under /crawls/NAME/.
package dashboard
