// Package sitekit holds what the generated test sites (spiders/demosite and
// spiders/sitetest) share: the page writer (Page), the href scanner and resolver, the
// request counter, the deterministic number and text helpers (Rand.Sentences), HTTP
// serving of a render function, the YAML spider template and the ground-truth crawler
// that learns what a site links by crawling its own rendered pages in process (Items:
// the items it reached, in ID order).
//
// A site is described by a RenderFunc, the single source of every byte it serves
// (its robots.txt aside, which the Crawler writes from Disallow); Serve answers HTTP
// requests with it and a Crawler walks it from / to compute the URLs a correct crawl
// reaches, so the truth can never disagree with what is served. A site embeds a Site
// (NewSite), whose methods (ServeHTTP, Requests, KindOf, Reachable, SpiderYAML...) it
// then has without writing them.
package sitekit
