// Package webtest serves the web as it is, not as the bundled sites are, for tests: pages
// in legacy encodings declared in every way a browser accepts (a Content-Type charset, a
// <meta charset>, a <meta http-equiv>, a byte-order mark, or nothing at all), HTML nested
// deeper than parsers like, binary bodies served as text/html, and bodies compressed
// with brotli and zstd.
//
// A Site is an http.Handler. Pages lists every page with the text a correct crawl reads
// from its <h1 class="name"> (UTF-8); SpiderYAML returns a YAML spider that stores one
// "page" item per page, keyed by that text.
package webtest
