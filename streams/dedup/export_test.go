package dedup

// BloomKey is bloomKey, for the external tests.
var BloomKey = bloomKey

// ParseMode is parseMode, for the external tests.
var ParseMode = parseMode

// Validate is validate, for the external tests.
func (c Config) Validate() error { return c.validate() }

// Config is the crawl's dedup config (the stored one), for the external tests.
func (d *Deduper) Config() Config { return d.stored }

// ExpireGenerations is expireGenerations, for the external tests.
const ExpireGenerations = expireGenerations
