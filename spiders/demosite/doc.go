// Package demosite is a deterministic local web shop used for demos, tests and
// benchmarks (`streamcrawl demo-site` serves it).
//
// A Site built by New(n) has about n reachable URLs: a home page, paged category
// listings (/c/<slug>, /c/<slug>?page=2, ...) and product pages (/p/<id>), plus the
// things a real crawl meets: the same link several times on a page, nav links on every
// page, relative, root-relative and absolute links, fragments, tracking-parameter
// variants of product URLs (/p/13?utm_source=related) whose canonical link names the
// plain URL, 404s (/p/999999, /missing/...), pages that always answer 500 (/flaky/<n>),
// a /robots.txt that disallows /private/ (linked from the home page, served anyway),
// non-HTML resources (/feed.json, /img/<id>.png), mailto: links and offsite links in
// the footer that a crawl must drop.
//
// The same n always gives the same site: pages are byte-identical for the same Host
// header. Absolute links are built from the Host header of each request, so the site
// works on any address.
//
// The site counts every request it serves (Requests, TotalRequests, Reset), and knows
// its own ground truth (Reachable, Kind, Products, ExpectedItems), computed by crawling
// its own rendered pages in process, so it can never disagree with what it serves.
// SpiderYAML returns a YAML spider that scrapes its products. Details and
// ExpectedTypedItems are the truth of a spider with typed fields (TypedItemRules): the
// price as a number, lists, the spec table as rows.
//
// SetPeers makes the home page link to other sites' home pages (other ports of
// 127.0.0.1, say), so that a crawl seeded with one site finds a whole group of them;
// each site still counts and describes only itself.
package demosite
