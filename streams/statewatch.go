package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams/loop"
)

// defaultStateInterval is how often a StateWatch looks.
const defaultStateInterval = 2 * time.Second

// StateWatch watches that a crawl's state is still in Redis, and notices failovers.
// Every Interval, and at once when an outage ends (Redis answers again), it reads the
// crawl's epoch (one HGET) and the replication ID of each primary (INFO
// replication; of every master of a cluster). A primary whose predecessor's ID is its
// previous one (master_replid2) is a replica that took over: a failover, reported to
// OnFailover.
type StateWatch struct {
	// Client is the crawl's Redis. Required.
	Client redis.UniversalClient
	// Layout is the crawl as the process opened it, with its epoch. Required.
	Layout Layout
	// Interval is how often it looks. Default 2 s.
	Interval time.Duration
	// Outage, when set, makes it look as soon as an outage ends.
	Outage *Outage
	// OnFailover, when set, is called from Run when a replica took over from a primary
	// since the last look; what says which.
	OnFailover func(ctx context.Context, what string)
	// Logger; nil means no-op.
	Logger *zap.Logger

	known map[string]bool // replication IDs of the primaries seen
}

// Run looks until ctx ends (then it returns nil) or the crawl's state is lost (then it
// returns an error wrapping ErrStateLost). A look that cannot read Redis is skipped.
func (w *StateWatch) Run(ctx context.Context) error {
	if w.Client == nil || w.Layout.Crawl == "" {
		return errors.New("streams: state watch needs a client and a layout")
	}
	log := cmp.Or(w.Logger, zap.NewNop())
	every := w.Interval
	if every <= 0 {
		every = defaultStateInterval
	}
	w.known = map[string]bool{}
	w.lookPrimaries(ctx, log) // what they are at start
	return loop.Every(ctx, every, loop.Config{Wake: w.Outage.ended}, func(ctx context.Context) error {
		if err := w.Check(ctx); errors.Is(err, ErrStateLost) {
			return loop.Stop(err)
		} else if err != nil {
			log.Debug("state watch: cannot read the crawl's epoch", zap.Error(err))
		}
		w.lookPrimaries(ctx, log)
		return nil
	})
}

// Check checks the crawl's epoch once (checkEpoch): a caller about to report the crawl
// done calls it first.
func (w *StateWatch) Check(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return checkEpoch(cctx, w.Client, w.Layout)
}

// lookPrimaries reads the replication IDs of the primaries and reports a failover to
// OnFailover.
func (w *StateWatch) lookPrimaries(ctx context.Context, log *zap.Logger) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ids, err := primaryIDs(cctx, w.Client)
	if err != nil {
		log.Debug("state watch: cannot read the primaries' replication IDs", zap.Error(err))
		return
	}
	var took []string
	for _, id := range ids {
		if len(w.known) > 0 && !w.known[id.replid] && w.known[id.replid2] {
			took = append(took, fmt.Sprintf("%s took over from the primary with replication ID %s", id.describe(), short(id.replid2)))
		}
	}
	for _, id := range ids {
		w.known[id.replid] = true
	}
	if len(took) > 0 && w.OnFailover != nil {
		w.OnFailover(ctx, strings.Join(took, "; "))
	}
}

// primaryID is what identifies a primary's history: its replication ID, and the one it
// continued when it was promoted (all zeros otherwise).
type primaryID struct {
	addr, replid, replid2 string
}

func (p primaryID) describe() string {
	if p.addr == "" {
		return "a replica (replication ID " + short(p.replid) + ")"
	}
	return "the replica " + p.addr
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// primaryIDs reads INFO replication of the primary, or of every master of a cluster.
func primaryIDs(ctx context.Context, rdb redis.UniversalClient) ([]primaryID, error) {
	read := func(ctx context.Context, c redis.UniversalClient, addr string) (primaryID, error) {
		info, err := c.InfoMap(ctx, "replication").Result()
		if err != nil {
			return primaryID{}, err
		}
		r := info["Replication"]
		if r["role"] != "master" {
			return primaryID{}, fmt.Errorf("streams: %s is a %s", addr, r["role"])
		}
		return primaryID{addr: addr, replid: r["master_replid"], replid2: r["master_replid2"]}, nil
	}
	cc, ok := AsCluster(rdb)
	if !ok {
		id, err := read(ctx, rdb, "")
		return []primaryID{id}, err
	}
	var mu sync.Mutex
	var ids []primaryID
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		id, err := read(ctx, m, m.Options().Addr)
		mu.Lock()
		ids = append(ids, id)
		mu.Unlock()
		return err
	})
	sort.Slice(ids, func(i, j int) bool { return ids[i].addr < ids[j].addr })
	return ids, err
}
