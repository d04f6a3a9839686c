// Package warc writes and reads WARC 1.1 files (ISO 28500:2017) of the pages a crawl
// fetched: a request and a response record per page, each record one gzip member, files
// rotated by size. It is small on purpose: what a crawler's archive and a replay need,
// no more. Record IDs are derived from where the page came from (the responses stream
// entry), so an archiver that writes a page twice can tell, and a restarted one skips
// what its directory already holds.
package warc
