// Package sitetest is a deterministic news site for tests: a different shape from the
// demo shop (package demosite), so crawler tests do not fit one site by accident.
//
// A Site built by New(n) has about n reachable URLs: a home page, paged monthly
// archives (/archive/<yyyy>/<mm>, ?page=2...), articles (/article/<slug>) each with an
// <article> element, paged author and tag listings (/author/<name>, /tag/<tag>), and
// search pages (/search?q=<tag>&sort=<date|title>) linked with their query parameters
// in varying order. Articles form one long chain through their "next article" links.
// There are 404s (/article/removed-post), pages that always answer 500 (/broken/<n>),
// a robots.txt that disallows /drafts/ (linked from the home page, served anyway), an
// RSS feed (/feed.xml), fragment, mailto: and offsite links.
//
// URLs are canonicalised by sorting their query parameters: /search?sort=date&q=go and
// /search?q=go&sort=date are the same page, counted under one key (the sorted form),
// as a crawler that canonicalises URLs fetches it once.
//
// The API has the shape of package demosite: New, ServeHTTP, Requests, TotalRequests,
// Reset, Reachable, ReachableKind, KindOf, Articles, ExpectedItems and SpiderYAML. The
// ground truth is computed by crawling the site's own rendered pages in process.
package sitetest
