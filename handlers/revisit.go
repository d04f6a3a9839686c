package handlers

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fetch"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// revisitMeta is the request meta field that carries a revisit's interval state from
// one fetch of a URL to the next: "<interval ms>:<content digest, hex>:<gen>", gen the
// mark of the fetch that scheduled it (frontier.RevisitChain).
const revisitMeta = "_revisit"

// revisitor schedules the next fetch of every fetched URL that matches one of the
// spider's revisit rules (settings.revisit.rules), in the frontier's revisit schedule, with
// the interval the rule gives: the first fetch gets its start interval, later ones half
// the last interval when the page changed (a 200 whose body digest differs from the
// last) and twice it when not (a 304, or the same digest). The state travels in the
// request's meta; the schedule keeps the request as it is.
type revisitor struct {
	rules    []spiders.RevisitRule
	frontier *frontier.Frontier
	counters *streams.Counters
}

// after schedules req's revisit after res, if a rule matches it; token is the request
// message's UUID, so a redelivered fetch does not schedule it twice. Answers other
// than a 200 or a 304 (errors, gone pages, redirects, retries) schedule nothing: a
// retry comes back with its state, a redirect's hop is a URL of its own.
func (v *revisitor) after(ctx context.Context, req *spiders.Request, res fetch.Result, token string) error {
	if v == nil || len(v.rules) == 0 {
		return nil
	}
	rule := spiders.RevisitFor(v.rules, req.URL)
	if rule == nil {
		return nil
	}
	cur, last, prev := revisitState(req.Meta)
	var digest string
	switch {
	case res.Outcome == fetch.Drop && res.Reason == "not_modified":
		digest = last
	case res.Outcome == fetch.Publish && res.Response != nil && res.Response.Status == 200:
		h := fnv.New64a()
		h.Write(res.Response.Body)
		digest = strconv.FormatUint(h.Sum64(), 16)
	default:
		return nil
	}
	changed := last != "" && digest != last
	next := rule.Next(cur, changed)
	nr := *req
	nr.Meta = maps.Clone(req.Meta)
	if nr.Meta == nil {
		nr.Meta = map[string]any{}
	}
	gen := revisitGen(token)
	nr.Meta[revisitMeta] = strconv.FormatInt(next.Milliseconds(), 10) + ":" + digest + ":" + strconv.FormatUint(uint64(gen), 16)
	nr.DontFilter, nr.Retries, nr.LastError = true, 0, ""
	payload, err := spiders.MarshalRequest(&nr)
	if err != nil {
		return fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	chain := frontier.RevisitChain{Gen: gen, Prev: prev}
	if fp, err := req.Fingerprint(); err == nil {
		chain.URL = fp[:]
	}
	out, err := v.frontier.ScheduleRevisit(ctx, spiders.HostKey(req.URL), req.Priority, req.Depth, payload, next, chain)
	if err != nil {
		return err // not in Redis: the input is not acked and comes back
	}
	if out == frontier.RevisitOtherChain && v.counters != nil {
		v.counters.Add("revisits_other_chain", 1)
	}
	if out == frontier.RevisitScheduled && v.counters != nil {
		v.counters.Add("revisits_scheduled", 1)
		if changed {
			v.counters.Add("revisits_changed", 1)
		} else if cur > 0 {
			v.counters.Add("revisits_unchanged", 1)
		}
	}
	return nil
}

// revisitState reads a request's revisit state from its meta: the interval that led to
// this fetch (0: none, the first fetch), the last content digest and the mark of the
// fetch that scheduled it (0 before marks were kept).
func revisitState(meta map[string]any) (time.Duration, string, uint32) {
	s, _ := meta[revisitMeta].(string)
	ms, rest, ok := strings.Cut(s, ":")
	if !ok {
		return 0, "", 0
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n <= 0 {
		return 0, "", 0
	}
	digest, mark, _ := strings.Cut(rest, ":")
	gen, _ := strconv.ParseUint(mark, 16, 32)
	return time.Duration(n) * time.Millisecond, digest, uint32(gen)
}

// revisitGen is the mark of the fetch of the request message token (its UUID): its
// FNV-1a hash folded into 1..frontier.MaxRevisitGen.
func revisitGen(token string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(token))
	return h.Sum32()%frontier.MaxRevisitGen + 1
}
