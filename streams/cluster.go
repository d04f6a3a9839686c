package streams

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// clusterStateReload is how often a cluster client re-reads the slot map while in use.
const clusterStateReload = 2 * time.Second

// isClusterURL reports a redis+cluster:// or rediss+cluster:// URL.
func isClusterURL(raw string) bool {
	return strings.HasPrefix(raw, "redis+cluster://") || strings.HasPrefix(raw, "rediss+cluster://")
}

// parseClusterURL reads redis+cluster://[user:password@]host:port,host:port[?options]
// (rediss+cluster:// for TLS; options as in go-redis parseClusterURL).
func parseClusterURL(raw string) (*redis.ClusterOptions, error) {
	scheme, rest, _ := strings.Cut(raw, "://")
	scheme = strings.TrimSuffix(scheme, "+cluster")
	rest, query, _ := strings.Cut(rest, "?")
	userinfo := ""
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		userinfo, rest = rest[:at+1], rest[at+1:]
	}
	rest = strings.TrimSuffix(rest, "/")
	addrs := strings.Split(rest, ",")
	for _, a := range addrs {
		if a == "" || strings.Contains(a, "/") {
			return nil, fmt.Errorf("want redis+cluster://host:port,host:port, got node %q", a)
		}
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	u := scheme + "://" + userinfo + addrs[0]
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return redis.ParseClusterURL(u)
}

// connectCluster connects to a Redis Cluster and checks that it answers and covers
// every slot.
func connectCluster(ctx context.Context, o ClientOptions, log *zap.Logger) (*Client, error) {
	u, files, err := takeTLSOptions(o.URL)
	if err != nil {
		return nil, err
	}
	opt, err := parseClusterURL(u)
	if err != nil {
		return nil, fmt.Errorf("streams: bad redis cluster url %q: %w", redactURL(o.URL), err)
	}
	if err := files.apply(opt.TLSConfig); err != nil {
		return nil, err
	}
	// Per node: the pool, buffers, timeouts and back-off of every client.
	o.tune(tuning{&opt.PoolSize, &opt.ReadBufferSize, &opt.WriteBufferSize, &opt.PipelineReadBufferSize,
		&opt.PipelineWriteBufferSize, &opt.ReadTimeout, &opt.MinRetryBackoff, &opt.MaxRetryBackoff})
	// go-redis reloads the slot map on MOVED, and otherwise once a minute: after a
	// failover it would dial the dead master for up to a minute.
	if opt.ClusterStateReloadInterval == 0 {
		opt.ClusterStateReloadInterval = clusterStateReload
	}
	wait := &waitHook{}
	opt.NewClient = func(o *redis.Options) *redis.Client {
		n := redis.NewClient(o)
		n.AddHook(wait) // each node's pipelines wait for that node's replicas
		return n
	}
	cc := redis.NewClusterClient(opt)
	c := &Client{UniversalClient: cc, Addr: strings.Join(opt.Addrs, ","), wait: wait}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := cc.ClusterInfo(pctx).Result()
	if err == nil && !strings.Contains(info, "cluster_state:ok") {
		err = fmt.Errorf("cluster_state is not ok (slots not all served)")
	}
	if err != nil {
		_ = cc.Close()
		return nil, fmt.Errorf("streams: cannot use redis cluster at %s: %w", c.Addr, err)
	}
	if o.CheckSettings {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			warnRiskySettings(ctx, n, log.With(zap.String("node", n.Options().Addr)))
			return nil
		})
	}
	return c, nil
}
