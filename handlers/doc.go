// Package handlers runs crawls: the entry point that does all of it in one call, the
// three stages as Watermill handlers, and the wiring of stages to Redis Streams.
// Turning a request into a response is package fetch's; storing a response on the
// responses stream (the wire format, its compression and dictionaries) is package
// internal/wire's.
//
// Crawl runs a spider with all stages or some, on a Redis URL or an embedded Redis,
// with a sink, until the crawl is done or ctx ends, and returns the crawl's Status;
// Options is the one configuration of a run (Crawl builds its process's runConfig from
// it, in Options.run; there is no other exported run configuration). The streamcrawl
// commands crawl, demo, fetch, parse and store use it. Seed, Replay, ReplayWARC,
// Process, Archive and RetryDead are the other runs and steps a user starts.
//
// Each behaviour lives in one file:
//
//	crawl.go        Crawl and Options: connect, open the sink, seed, run, read the status
//	dropped.go      a crawl that dropped every request (an error) or most (a warning)
//	nopage.go       a crawl that fetched no page: each start URL and what became of it (an error)
//	fields.go       per item type and field the pages with a value; empty items not stored
//	runner.go       one process's run: open, serve, the shutdown order
//	config.go       runConfig, built from Options, and its defaults
//	stages.go       each stage wired to its streams, with its background components
//	background.go   the components beside a router; one that stops ends the run
//	fetchstage.go   the fetch stage: a request message, fetch.Fetcher.Do, a response message
//	revisit.go      the next fetch of a URL a revisit rule matches, in the frontier's schedule
//	                (a 304 or a bad answer from the fetch stage, a 200 from the parse stage)
//	gone.go         a page that answers badly: revisited at the rule's max; its tombstone item
//	digest.go       the digest of what a page's callback extracted, the revisits' "changed"
//	continuous.go   a continuous crawl's mode recorded in Redis (package spiders, "Revisits",
//	                maps every piece of revisits)
//	browsers.go     the fetch process's browser pool for rendered pages; the spider's extractor
//	parse.go        the parse stage: spider callbacks, links and items through the frontier
//	sitemap.go      the built-in sitemap callbacks
//	store.go        the store stage: processors, then the sink
//	response_dict.go  the responses' compression dictionary: trained, published, loaded
//	                (in Redis); the encoding itself is package internal/wire's
//	frontier.go     the crawl's frontier and layout from the spider; requests as candidates
//	partition_spread.go  the start-up log of where a crawl's partitions sit (inspect.PartitionMasters); a warning when uneven
//	owner.go        the crawl's owner spider: its fingerprint claimed in the meta hash
//	gospiders.go    Go spiders compiled into the binary, by name (Register), for fleet workers
//	adopt.go        a new version of a crawl's spider takes the crawl over (Adopt), for fleet workers
//	fingerprint_rules.go  the digest of the spider's fingerprint rules: a change warns once
//	corrupt.go      a key of the wrong type (WRONGTYPE) ends the run with ErrCorruptState
//	seed.go         Seed: start URLs through the frontier
//	seeds.go        runtime seeds pushed while services run
//	watch.go        the progress watch: logs progress, ends a run once the crawl is done
//	done.go         "done" for a group of its own (archiver, post-processor, replay)
//	group.go        a handler in a consumer group of its own, until done
//	process.go      post-processors in a group of their own
//	replay.go       re-parse stored responses or re-deliver items in a new group
//	replay_warc.go  re-parse the pages of WARC files
//	archive.go      responses to WARC files; archive_s3.go: their upload to a bucket
//	deadretry.go    dead letters back on their streams
//	middleware.go   handler failures recorded on the message, logged at a bounded rate
//	waitlog.go      what had to wait (retries, slow hosts, robots.txt), summed at INFO
//	wmlog.go        Watermill's logger on zap
//
// Every handler returns only after its output is in Redis (or, for store, in the sink);
// the router then acks the input. An error or a panic nacks it: the subscriber retries it
// with backoff and, after the stage's delivery limit, moves it to dead letters with the
// error. Every long-running component has Run(ctx) error and returns nil when ctx ends;
// what a run opened is closed in the order runStages documents, each with Close(ctx)
// (Shutdown(ctx) for the publisher) under a context that survives the run's and bounded
// by the component's own timeout; a last write that fails is logged.
package handlers
