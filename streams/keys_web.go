package streams

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

// Validators is the hash of what the last fetch of each URL answered, for conditional
// recrawls: field the URL's 16-byte fingerprint, value "<etag>\n<last-modified>".
func (k Keys) Validators() string { return k.key("validators") }
