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
	opt, err := parseClusterURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("streams: bad redis cluster url %q: %w", redactURL(o.URL), err)
	}
	if !strings.Contains(o.URL, "pool_size=") {
		opt.PoolSize = defaultPoolSize(o.Partitions) // per node
	}
	if o.PoolSize > 0 {
		opt.PoolSize = o.PoolSize
	}
	if opt.ReadTimeout == 0 || opt.ReadTimeout < 5*time.Second {
		opt.ReadTimeout = 10 * time.Second
	}
	opt.MinRetryBackoff = 50 * time.Millisecond
	opt.MaxRetryBackoff = time.Second
	cc := redis.NewClusterClient(opt)
	c := &Client{UniversalClient: cc, Addr: strings.Join(opt.Addrs, ",")}
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
