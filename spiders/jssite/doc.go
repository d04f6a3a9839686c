// Package jssite is a deterministic shop built by JavaScript, served on loopback with
// its truth, for the browser fetcher's tests and benchmarks. Over plain HTTP its pages
// are empty shells; in a browser:
//
//   - / loads the categories and brands from a JSON API after load and adds their
//     links; a click on one is routed with history.pushState (a single-page app);
//   - /c/<slug> fills its catalogue from /api/c/<slug>?page=N and loads the next page
//     when scrolled to the bottom (infinite scroll), pushing ?page=N to the history as
//     it goes; products on pages after the first are reached only by scrolling;
//   - /p/<id> renders its product from /api/p/<id>;
//   - /go/<id> sends the browser to /p/<id> by script (location.replace);
//   - /status is a page whose script tries to fetch the cloud metadata address
//     (169.254.169.254) and a forbidden address the test names (SetForbidden).
//
// Half its page types need no browser: /guide/<n> (articles, an item each) and
// /brand/<n> are plain server-rendered HTML, which render: auto learns to fetch over
// HTTP. ExpectedItems is what a crawl with SpiderYAML stores when it renders (every
// product and guide); without rendering it stores nothing.
package jssite
