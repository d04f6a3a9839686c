package streams

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// isSentinelURL reports a redis:// or rediss:// URL with a master_name option: the
// addresses of Sentinels and the name they know the primary by.
func isSentinelURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "redis" || u.Scheme == "rediss") && u.Query().Has("master_name")
}

// connectSentinel connects to the primary that the Sentinels of a Sentinel URL name,
// in go-redis ParseFailoverURL's form:
// redis://[user:password@]sentinel:port[/db]?master_name=NAME&addr=sentinel2:port&...
// (the user and password are the Sentinels'; password= and username= options are the
// data nodes'). The client asks the Sentinels again whenever its primary stops
// answering, and so follows a failover.
func connectSentinel(ctx context.Context, o ClientOptions, log *zap.Logger) (*Client, error) {
	opt, err := redis.ParseFailoverURL(o.URL)
	if err == nil && opt.MasterName == "" {
		err = fmt.Errorf("master_name is empty")
	}
	if err != nil {
		return nil, fmt.Errorf("streams: bad redis sentinel url %q: %w", redactURL(o.URL), err)
	}
	o.tune(tuning{&opt.PoolSize, &opt.ReadBufferSize, &opt.WriteBufferSize, &opt.PipelineReadBufferSize,
		&opt.PipelineWriteBufferSize, &opt.ReadTimeout, &opt.MinRetryBackoff, &opt.MaxRetryBackoff})
	c := &Client{Addr: fmt.Sprintf("%s (sentinels %s)", opt.MasterName, strings.Join(opt.SentinelAddrs, ","))}
	c.use(redis.NewFailoverClient(opt))
	probe := *opt
	probe.MaxRetries, probe.PoolSize = -1, 1
	if err := pingOnce(ctx, redis.NewFailoverClient(&probe)); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("streams: cannot reach the redis primary %s: %w", c.Addr, err)
	}
	if o.CheckSettings {
		warnRiskySettings(ctx, c.UniversalClient, log)
	}
	return c, nil
}
