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
//     rules and fields, with no Go code (yaml*.go); a field is a CSS selector, or a
//     mapping that shapes and types its values or reads them from the page's JSON-LD or
//     microdata (fields.go, yaml_fields.go; numbers and prices in fieldnumber.go,
//     structured data in jsonld.go, microdata.go and datapath.go);
//   - rendering: Render (true, false, auto) and Page (wait, block, actions as data) in
//     requests, rules and spiders.
//
// How a Response is stored between the fetch and parse stages (its wire format,
// compression and dictionaries) is not a spider's concern: it lives with the stages, in
// handlers/internal/wire. Settings.ResponseCompression and Settings.ResponseDict choose
// it per spider.
//
// # Revisits
//
// Three knobs fetch URLs again, in one settings block (Settings.Revisit,
// RevisitSettings; the YAML keys of before, settings.revisit as a list,
// settings.revisit_after and settings.dedup_expire_after, still load with a warning in
// Spider.Warnings). Every piece, by knob:
//
//   - all three: spiders/revisit.go (RevisitSettings, its checks), settings.go
//     (Settings.Revisit; ItemVersioned: item versions on by default with rules or
//     after), yaml_revisit.go (the YAML block and its old keys), duration.go (days in
//     YAML durations: max: 14d); handlers/fetch/conditional.go keeps the validators
//     (ETag, Last-Modified) of the URLs rules or after fetch again (and of dont_filter
//     requests), which their next fetch sends so that an unchanged page answers 304,
//     forgotten on forget_after's clock when it is set;
//   - rules, the adaptive schedule: spiders/revisit.go (RevisitRule: the interval halves
//     on a change, doubles otherwise; gone_checks; RevisitFor); handlers/stages.go gives
//     the fetch and parse stages a revisitor, handlers/revisit.go (it schedules each
//     fetched URL's next fetch, the interval state in the request's meta: a 304 and a
//     bad answer in the fetch stage, a 200 in the parse stage with the digest of what the
//     callback extracted, handlers/digest.go, less settings.revisit.volatile fields);
//     handlers/gone.go (a gone page: revisited at max, one tombstone item when it
//     goes); streams/frontier/revisit.go (the
//     schedule in Redis: minute buckets, one chain per URL, due revisits released into
//     their hosts' queues); streams/inspect/revisits.go (ReadRevisits: the schedule by
//     when it is due, for status); continuous crawls, which are not done while a
//     revisit is due within their idle window: cmd/internal/cli/continuous_flags.go
//     (--continuous, --idle-window), handlers/continuous.go (Crawl records the mode),
//     streams/inspect/continuous.go (the mode in Redis; Progress.Done waits for it);
//   - after, every URL again once queued that long ago: handlers/frontier.go
//     (frontierConfig: frontier.Config.Revisit), streams/frontier/frontier.go and
//     emit_lua.go (the URL's fingerprint and time in the seenat hash instead of the seen
//     set);
//   - forget_after, the seen set forgetting: handlers/frontier.go (newFrontier:
//     dedup.Config.ExpireAfter), streams/dedup/expire.go (the seen set in generations,
//     the oldest dropped whole; the frontier runs DropExpired).
//
// Sub-packages serve tests and demos: demosite (a deterministic shop), broadsite (many
// hosts), sitetest (a deterministic news site with its truth), jssite (a shop built by
// JavaScript, with its truth, for rendering), webtest (legacy encodings and other
// ways of the real web) and datasite (JSON-LD, microdata and tables, with their truth,
// for typed fields).
package spiders
