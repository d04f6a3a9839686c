package streams

import "strconv"

// Keys of the fetcher's memory of the web: cookies, the login step, what the last fetch
// of a URL answered. Like the others they carry the partition's hash tag; per-site keys
// live in the partition of the site (Layout.ForHost of the site's registrable domain).

// Cookies is the hash of one cookie session's cookies for one site (its registrable
// domain, "example.co.uk"): field "<name>|<domain>|<path>", value "<url>\n<Set-Cookie>".
func (k Keys) Cookies(session, site string) string {
	return k.key("cookies:" + session + ":" + site)
}

// Login records the crawl's login step: "pending" while one fetcher logs in, "done"
// after.
func (k Keys) Login() string { return k.key("login") }

// Validators is one bucket of what the last fetch of each URL answered, for
// conditional recrawls: small hashes (Redis keeps them as compact listpacks), field 8
// bytes of the URL's fingerprint, value "<etag>\n<last-modified, Unix seconds>".
func (k Keys) Validators(bucket uint32) string {
	return k.key("validators:" + strconv.FormatUint(uint64(bucket), 10))
}
