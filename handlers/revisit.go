package handlers

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/streamcrawl/streamcrawl/handlers/fetch"
	"github.com/streamcrawl/streamcrawl/spiders"
	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/frontier"
)

// revisitMeta is the request meta field that carries a revisit's state from one fetch
// of a URL to the next: "<interval ms>:<content digest, hex>:<gen>:<gone>", gen the
// mark of the fetch that scheduled it (frontier.RevisitChain), gone how many bad
// answers in a row the URL gave (0 written as nothing; older states lack the field).
const revisitMeta = "_revisit"

// revisitor schedules the next fetch of every fetched URL that matches one of the
// spider's revisit rules (settings.revisit.rules), in the frontier's revisit schedule,
// with the interval the rule gives: the first fetch gets its start interval, later ones
// half the last interval when the page changed (a 200 whose digest of what the spider
// extracted differs from the last, see pageDigest) and twice it when not (a 304, or
// the same digest). A bad answer (anything but a 200 or a 304 the request asked for)
// makes the page gone: it is fetched again at the rule's max interval, gone_checks
// times, and consumers get a tombstone item when a page they had turns gone (gone.go).
// The state travels in the request's meta; the schedule keeps the request as it is.
//
// The fetch stage calls fetched (a 304, a bad answer); the parse stage calls parsed
// (a 200), once it knows the page's digest.
type revisitor struct {
	rules    []spiders.RevisitRule
	frontier *frontier.Frontier
	layout   streams.Layout
	counters *streams.Counters
}

// newRevisitor returns the revisitor of sp's revisit rules; nil when it has none.
func newRevisitor(sp *spiders.Spider, fr *frontier.Frontier, layout streams.Layout, counters *streams.Counters) (*revisitor, error) {
	if len(sp.Settings.Revisit.Rules) == 0 {
		return nil, nil
	}
	rules := slices.Clone(sp.Settings.Revisit.Rules)
	for i := range rules {
		if err := rules[i].Compile(); err != nil { // a Go spider's rules may not be compiled yet
			return nil, err
		}
	}
	return &revisitor{rules: rules, frontier: fr, layout: layout, counters: counters}, nil
}

// revisitState is what a request's revisit meta says.
type revisitState struct {
	cur    time.Duration // the interval that led to this fetch; 0: none, the first fetch
	digest string        // the last 200's digest; "": none yet
	prev   uint32        // the mark of the fetch that scheduled this one; 0: none
	gone   int           // bad answers in a row before this fetch
}

// fetched schedules req's revisit after res, the fetch stage's result, if a rule
// matches it; token is the request message's UUID, so a redelivered fetch does not
// schedule it twice. A 304 is unchanged; a 200 is left to the parse stage (parsed); a
// retry comes back with its state and a request requeued before it was fetched has
// none to change; every other answer is bad (see badAnswer).
func (v *revisitor) fetched(ctx context.Context, req *spiders.Request, res fetch.Result, token string) error {
	if v == nil || len(v.rules) == 0 {
		return nil
	}
	rule := spiders.RevisitFor(v.rules, req.URL)
	if rule == nil {
		return nil
	}
	st := readRevisitState(req.Meta)
	switch {
	case res.Outcome == fetch.Retry || res.Outcome == fetch.Drop && res.Reason == fetch.DropRequeued:
		return nil
	case res.Outcome == fetch.Drop && res.Reason == "not_modified":
		// Asked with the validators of the last 200, so the page is that one, back
		// from whatever answers it gave in between.
		return v.schedule(ctx, req, st, rule.Next(st.cur, false), revisitState{digest: st.digest}, token, false)
	case res.Outcome == fetch.Publish && res.Response != nil && res.Response.Status >= 200 && res.Response.Status < 300:
		return nil // a 200 is scheduled by the parse stage; another 2xx schedules nothing
	}
	return v.badAnswer(ctx, req, rule, st, res, token)
}

// parsed schedules the revisit of req, fetched with a 200 whose extracted items and
// links have digest, after the parse stage emitted them; token is the response
// message's UUID. A page back from gone starts again at the rule's start interval.
func (v *revisitor) parsed(ctx context.Context, req *spiders.Request, digest string, token string) error {
	if v == nil || len(v.rules) == 0 || req == nil {
		return nil
	}
	rule := spiders.RevisitFor(v.rules, req.URL)
	if rule == nil {
		return nil
	}
	st := readRevisitState(req.Meta)
	if st.gone > 0 {
		v.count("revisits_back", 1)
		return v.schedule(ctx, req, st, rule.Start, revisitState{digest: digest}, token, true)
	}
	changed := st.digest != "" && digest != st.digest
	return v.schedule(ctx, req, st, rule.Next(st.cur, changed), revisitState{digest: digest}, token, changed)
}

// schedule puts req back in the revisit schedule next from now, carrying the state
// next (its interval and mark filled in here), as the link of the chain of the fetch
// of token after the one st says scheduled it.
func (v *revisitor) schedule(ctx context.Context, req *spiders.Request, st revisitState, after time.Duration, next revisitState, token string, changed bool) error {
	nr := *req
	nr.Meta = maps.Clone(req.Meta)
	if nr.Meta == nil {
		nr.Meta = map[string]any{}
	}
	gen := revisitGen(token)
	next.cur = after
	nr.Meta[revisitMeta] = next.encode(gen)
	nr.DontFilter, nr.Retries, nr.LastError = true, 0, ""
	payload, err := spiders.MarshalRequest(&nr)
	if err != nil {
		return fmt.Errorf("%w: %w", streams.ErrPoison, err)
	}
	chain := frontier.RevisitChain{Gen: gen, Prev: st.prev}
	if fp, err := req.Fingerprint(); err == nil {
		chain.URL = fp[:]
	}
	out, err := v.frontier.ScheduleRevisit(ctx, spiders.HostKey(req.URL), req.Priority, req.Depth, payload, after, chain)
	if err != nil {
		return err // not in Redis: the input is not acked and comes back
	}
	switch {
	case out == frontier.RevisitOtherChain:
		v.count("revisits_other_chain", 1)
	case out == frontier.RevisitScheduled:
		v.count("revisits_scheduled", 1)
		switch {
		case next.gone > 0:
			v.count("revisits_gone", 1)
		case changed:
			v.count("revisits_changed", 1)
		case st.cur > 0:
			v.count("revisits_unchanged", 1)
		}
	}
	return nil
}

func (v *revisitor) count(field string, n int64) {
	if v.counters != nil {
		v.counters.Add(field, n)
	}
}

// encode writes s as a revisit meta value, with gen the mark of the fetch that
// scheduled it.
func (s revisitState) encode(gen uint32) string {
	out := strconv.FormatInt(s.cur.Milliseconds(), 10) + ":" + s.digest + ":" + strconv.FormatUint(uint64(gen), 16)
	if s.gone > 0 {
		out += ":" + strconv.Itoa(s.gone)
	}
	return out
}

// readRevisitState reads a request's revisit state from its meta (the zero state for a
// request no revisit scheduled).
func readRevisitState(meta map[string]any) revisitState {
	s, _ := meta[revisitMeta].(string)
	ms, rest, ok := strings.Cut(s, ":")
	if !ok {
		return revisitState{}
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n <= 0 {
		return revisitState{}
	}
	digest, rest, _ := strings.Cut(rest, ":")
	mark, gone, _ := strings.Cut(rest, ":")
	gen, _ := strconv.ParseUint(mark, 16, 32)
	g, _ := strconv.Atoi(gone)
	return revisitState{cur: time.Duration(n) * time.Millisecond, digest: digest, prev: uint32(gen), gone: max(g, 0)}
}

// revisitGen is the mark of the fetch of the request message token (its UUID): its
// FNV-1a hash folded into 1..frontier.MaxRevisitGen.
func revisitGen(token string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(token))
	return h.Sum32()%frontier.MaxRevisitGen + 1
}
