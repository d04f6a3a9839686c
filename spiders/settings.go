package spiders

import (
	"fmt"
	"regexp"
	"time"
)

// Defaults of Settings.
const (
	DefaultConcurrency     = 32
	DefaultUserAgent       = "streamcrawl (+https://github.com/streamcrawl/streamcrawl)"
	DefaultDownloadTimeout = 30 * time.Second
	DefaultConnectTimeout  = 10 * time.Second
	DefaultMaxBodySize     = 10 << 20
	DefaultMaxRedirects    = 10
	DefaultMaxRetries      = 3
)

// Settings tune how a spider's pages are fetched and which are followed. Zero values
// mean the documented defaults (see SetDefaults).
type Settings struct {
	// Concurrency is the number of requests in flight per fetch process. Default 32.
	Concurrency int `yaml:"concurrency"`
	// UserAgent is sent with every request. Default DefaultUserAgent.
	UserAgent string `yaml:"user_agent"`
	// DownloadTimeout bounds a whole fetch, body included. Default 30s.
	DownloadTimeout time.Duration `yaml:"download_timeout"`
	// ConnectTimeout bounds the TCP (and TLS) connect. Default 10s.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// MaxBodySize caps a body in bytes; longer bodies are cut and flagged truncated.
	// Default 10 MiB.
	MaxBodySize int64 `yaml:"max_body_size"`
	// MaxRedirects is the longest redirect chain followed. Default 10.
	MaxRedirects int `yaml:"max_redirects"`
	// Headers are sent with every request.
	Headers map[string]string `yaml:"headers"`
	// MaxRetries is how many times a fetch that failed with a network error, a timeout,
	// a 5xx, 408 or 429 is retried (with exponential backoff through the crawl's delayed
	// set) before the request becomes a dead letter. Default 3; 0 means the default, a
	// negative value no retries.
	MaxRetries int `yaml:"max_retries"`
	// DedupItems drops an item whose key (type + key fields) a page of the crawl has
	// yielded before, at the parse stage, so that tracking-parameter variants of a page
	// and redelivered pages store each item once. Default true.
	DedupItems *bool `yaml:"dedup_items"`
	// MaxDepth drops requests deeper than this many links from a start URL; 0 means no limit.
	MaxDepth int `yaml:"max_depth"`

	// Keys of the format whose features are not built yet: accepted, warned about.
	ObeyRobots           *bool          `yaml:"obey_robots"`
	AllowPrivateNetworks *bool          `yaml:"allow_private_networks"`
	PerHostConcurrency   int            `yaml:"per_host_concurrency"`
	PerHostDelay         time.Duration  `yaml:"per_host_delay"`
	Limits               []LimitRule    `yaml:"limits"`
	Autothrottle         *bool          `yaml:"autothrottle"`
	MaxPages             int            `yaml:"max_pages"`
	Dedup                string         `yaml:"dedup"`
	Capacity             int64          `yaml:"capacity"`
	ErrorRate            float64        `yaml:"error_rate"`
	Order                string         `yaml:"order"`
	RevisitAfter         time.Duration  `yaml:"revisit_after"`
	Extra                map[string]any `yaml:"-"`
}

// LimitRule is a per-domain politeness override.
type LimitRule struct {
	Domain      string        `yaml:"domain"`
	Concurrency int           `yaml:"concurrency"`
	Delay       time.Duration `yaml:"delay"`
}

// SetDefaults fills zero values with the defaults.
func (s *Settings) SetDefaults() {
	if s.Concurrency == 0 {
		s.Concurrency = DefaultConcurrency
	}
	if s.UserAgent == "" {
		s.UserAgent = DefaultUserAgent
	}
	if s.DownloadTimeout == 0 {
		s.DownloadTimeout = DefaultDownloadTimeout
	}
	if s.ConnectTimeout == 0 {
		s.ConnectTimeout = DefaultConnectTimeout
	}
	if s.MaxBodySize == 0 {
		s.MaxBodySize = DefaultMaxBodySize
	}
	if s.MaxRedirects == 0 {
		s.MaxRedirects = DefaultMaxRedirects
	}
}

// ItemDedup returns the effective DedupItems.
func (s *Settings) ItemDedup() bool { return s.DedupItems == nil || *s.DedupItems }

// Retries returns the effective MaxRetries: the default for 0, none for a negative value.
func (s *Settings) Retries() int {
	switch {
	case s.MaxRetries == 0:
		return DefaultMaxRetries
	case s.MaxRetries < 0:
		return 0
	}
	return s.MaxRetries
}

// Validate reports settings out of range.
func (s *Settings) Validate() error {
	switch {
	case s.Concurrency < 0 || s.Concurrency > 10000:
		return fmt.Errorf("spiders: settings.concurrency %d out of range 1..10000", s.Concurrency)
	case s.DownloadTimeout < 0:
		return fmt.Errorf("spiders: settings.download_timeout %s is negative", s.DownloadTimeout)
	case s.ConnectTimeout < 0:
		return fmt.Errorf("spiders: settings.connect_timeout %s is negative", s.ConnectTimeout)
	case s.MaxBodySize < 0:
		return fmt.Errorf("spiders: settings.max_body_size %d is negative", s.MaxBodySize)
	case s.MaxRedirects < 0:
		return fmt.Errorf("spiders: settings.max_redirects %d is negative", s.MaxRedirects)
	case s.MaxDepth < 0:
		return fmt.Errorf("spiders: settings.max_depth %d is negative", s.MaxDepth)
	}
	return nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidateName checks a crawl name: 1-64 letters, digits, '_', '.', '-', not starting
// with punctuation (it becomes part of Redis keys and file names).
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("spiders: invalid spider name %q: use 1-64 letters, digits, '_', '.', '-'", name)
	}
	return nil
}
