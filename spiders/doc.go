// Package spiders is what a crawl is made of, and the API spiders are written against.
//
// A Spider has a name (it namespaces the crawl's Redis keys), start URLs, a scope
// (AllowedDomains, Settings.MaxDepth, ...), Settings for the fetcher and the frontier,
// and named callbacks:
//
//	sp := &spiders.Spider{Name: "shop", StartURLs: []string{"https://shop.example/"}}
//	sp.Handle("parse", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
//		for _, link := range res.Links("a.product") {
//			if req, err := res.Follow(link, "product"); err == nil {
//				out.Follow(req)
//			}
//		}
//		return nil
//	})
//	sp.Handle("product", func(ctx context.Context, res *spiders.Response, out *spiders.Output) error {
//		out.Yield(spiders.NewItem("product", map[string]any{"name": res.Text("h1"), "price": res.Text(".price")}))
//		return nil
//	})
//
// handlers.Crawl runs it. Callbacks are named, not passed, because a Request travels
// through Redis to whichever process parses its Response: every process registers the
// same callbacks, and Response.Follow checks the name at once.
//
// The package holds:
//   - the spider: Spider, Callback, Output, Settings (and LimitRule, ByteSize),
//     Retention, Login, Scope, and the spider's Fingerprint (owner.go: the crawl it
//     started knows it);
//   - what flows through the crawl: Request (with its Fingerprint and canonical URL,
//     CanonicalURL; FingerprintRules and Spider.RequestFingerprint shape the key per
//     spider, fingerprint_rules.go), Response (Doc, Text, Attr, Links, Follow, charset decoding), Item
//     and its key;
//   - YAML spiders: Parse and LoadFile build a Spider from a file of start URLs, follow
//     rules and CSS selectors, with no Go code;
//   - rendering: Render (true, false, auto) and Page (wait, block, actions as data) in
//     requests, rules and spiders.
//
// How a Response is stored between the fetch and parse stages (its wire format,
// compression and dictionaries) is not a spider's concern: it lives with the stages, in
// handlers/internal/wire. Settings.ResponseCompression and Settings.ResponseDict choose
// it per spider.
//
// Sub-packages serve tests and demos: demosite (a deterministic shop), broadsite (many
// hosts), sitetest (a deterministic news site with its truth), jssite (a shop built by
// JavaScript, with its truth, for rendering) and webtest (legacy encodings and other
// ways of the real web).
package spiders
