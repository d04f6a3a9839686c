package handlers

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
)

// fingerprintRulesField is the field of the crawl's meta hash that holds the digest
// of the fingerprint rules its seen set was last keyed with
// (spiders.Spider.FingerprintRulesDigest).
const fingerprintRulesField = "fingerprint_rules"

// FingerprintRulesChanged is the warning a process logs, once per change and crawl,
// when its spider's fingerprint rules differ from those the crawl's seen set was keyed
// with.
const FingerprintRulesChanged = "the spider's fingerprint rules (settings.fingerprint) changed on a running crawl: " +
	"its seen set keeps the keys of the old rules, so a URL seen before may be fetched once more under its new key; " +
	"to rebuild the seen set under the new rules, start the crawl over (`streamcrawl reset --crawl <name>`, or crawl --fresh)"

// fingerprintRulesScript records the digest of the fingerprint rules a crawl is keyed
// with, and returns the one recorded before when it differs: a crawl without a record
// that was seeded already predates the record and was keyed with the default rules.
//
// KEYS[1] -> sc:{c}:meta
// ARGV[1] -> the digest of this spider's rules
// ARGV[2] -> the default rules' digest
// ARGV[3] -> 1: record ARGV[1] over another digest (the caller warns), 0: only where
// there is none
// Output: the digest recorded before, when it differs from ARGV[1]; else ""
var fingerprintRulesScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'fingerprint_rules')
if not cur then
  if redis.call('HEXISTS', KEYS[1], 'seeded_at') == 0 then
    redis.call('HSET', KEYS[1], 'fingerprint_rules', ARGV[1])
    return ''
  end
  cur = ARGV[2]
end
if cur == ARGV[1] then return '' end
if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'fingerprint_rules', ARGV[1]) end
return cur
`)

// checkFingerprintRules records the digest of sp's fingerprint rules in the crawl's
// meta hash and, when the crawl was keyed with other rules, logs FingerprintRulesChanged
// to log and records the new digest, so that the change is told once. Without a log
// it records a digest only for a crawl that has none.
func checkFingerprintRules(ctx context.Context, rdb redis.UniversalClient, l streams.Layout, sp *spiders.Spider, log *zap.Logger) error {
	digest := sp.FingerprintRulesDigest()
	update := "0"
	if log != nil {
		update = "1"
	}
	was, err := fingerprintRulesScript.Run(ctx, rdb, []string{l.Global.Meta}, digest, spiders.DefaultFingerprintRules, update).Text()
	if err != nil {
		return fmt.Errorf("handlers: record the fingerprint rules of crawl %s: %w", l.Crawl, err)
	}
	if was != "" && log != nil {
		log.Warn(FingerprintRulesChanged, zap.String("crawl", l.Crawl), zap.String("setting", "settings.fingerprint"),
			zap.String("rules_before", was), zap.String("rules_now", digest),
			zap.String("reset", "streamcrawl reset --crawl "+l.Crawl))
	}
	return nil
}
