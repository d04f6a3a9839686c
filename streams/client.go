package streams

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/streams/internal/rkit"
)

// DefaultPoolSize is the number of Redis connections a process holds at most, unless
// --redis-pool-size or the URL's pool_size option says otherwise. Blocking reads hold
// one connection each for their block time, so a process running all three stages needs
// at least 3 plus a few for publishing and acks.
const DefaultPoolSize = 16

// ClientOptions say how to reach Redis.
type ClientOptions struct {
	// URL is redis://[user:password@]host:port[/db][?options] or rediss:// for TLS
	// (options as in go-redis ParseURL: pool_size, dial_timeout, read_timeout, ...;
	// and, with rediss://, tls_ca, tls_cert, tls_key and tls_server_name: see tlsFiles).
	// redis+cluster://[user:password@]host:port,host:port[?options] (rediss+cluster://
	// for TLS) is a Redis Cluster, reached through any of the listed nodes.
	// Empty means an embedded in-process Redis (miniredis) that lives as long as the
	// process: single-machine mode, nothing persisted.
	URL string
	// PoolSize overrides the pool size when > 0. Default DefaultPoolSize (or the URL's),
	// plus 3 per partition of a partitioned crawl (see Partitions).
	PoolSize int
	// Partitions is the partition count of the crawl the process runs, when known: each
	// stage holds one blocking read per partition, so the default pool grows with it.
	Partitions int
	// CheckSettings logs a warning when the server's settings can lose crawl state
	// (eviction policy, persistence off). Commands that run stages set it.
	CheckSettings bool
	// Logger gets the warnings; nil means no-op.
	Logger *zap.Logger
}

// Client is a connected Redis client and what it takes to close it.
type Client struct {
	// UniversalClient is the go-redis client (a cluster client for a Redis Cluster).
	redis.UniversalClient
	// Embedded is the in-process server when running without a Redis URL.
	Embedded *miniredis.Miniredis
	// Addr is the server address, for messages.
	Addr string

	wait *waitHook // on every connection: WAIT after durable pipelines (see SetDurability)
}

// Unwrap returns the go-redis client c wraps: code that must reach every master of a
// cluster (ForEachMaster) looks through c with it.
func (c *Client) Unwrap() redis.UniversalClient { return c.UniversalClient }

// AsCluster returns the Redis Cluster client rdb is, or wraps (a Client connected to a
// cluster); false for one Redis, Sentinel or the embedded one.
func AsCluster(rdb redis.UniversalClient) (*redis.ClusterClient, bool) { return rkit.Cluster(rdb) }

// Close closes the client and stops the embedded server, if any. It takes no context:
// it flushes nothing (a connection pool, an io.Closer), unlike the components that
// buffer writes and have Close(ctx).
func (c *Client) Close() error {
	err := c.UniversalClient.Close()
	if c.Embedded != nil {
		c.Embedded.Close()
	}
	return err
}

// Connect opens a client, checks that the server answers, and warns (through the
// logger) when the server's settings could lose crawl state. Its errors never hold the
// URL's password (see redactURLError).
func Connect(ctx context.Context, o ClientOptions) (*Client, error) {
	c, err := connect(ctx, o)
	if err != nil {
		return nil, redactURLError(o.URL, err)
	}
	return c, nil
}

func connect(ctx context.Context, o ClientOptions) (*Client, error) {
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	switch {
	case isClusterURL(o.URL):
		return connectCluster(ctx, o, log)
	case isSentinelURL(o.URL):
		return connectSentinel(ctx, o, log)
	}
	c := &Client{}
	var opt *redis.Options
	if o.URL == "" {
		m := miniredis.NewMiniRedis()
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("streams: start embedded redis: %w", err)
		}
		c.Embedded = m
		opt = &redis.Options{Addr: m.Addr()}
	} else {
		if !strings.Contains(o.URL, "://") {
			return nil, noSchemeError(o.URL)
		}
		u, files, err := takeTLSOptions(o.URL)
		if err != nil {
			return nil, err
		}
		opt, err = redis.ParseURL(u)
		if err != nil {
			return nil, fmt.Errorf("streams: bad redis url %q: %w", redactURL(o.URL), err)
		}
		if err := files.apply(opt.TLSConfig); err != nil {
			return nil, err
		}
	}
	o.tune(tuning{&opt.PoolSize, &opt.ReadBufferSize, &opt.WriteBufferSize, &opt.PipelineReadBufferSize,
		&opt.PipelineWriteBufferSize, &opt.ReadTimeout, &opt.MinRetryBackoff, &opt.MaxRetryBackoff})
	c.Addr = opt.Addr
	c.use(redis.NewClient(opt))
	probe := *opt
	probe.MaxRetries, probe.PoolSize = -1, 1
	if err := pingOnce(ctx, redis.NewClient(&probe)); err != nil {
		_ = c.Close()
		return nil, pingError(c.Addr, opt.TLSConfig != nil, err)
	}
	if c.Embedded == nil && o.CheckSettings {
		warnRiskySettings(ctx, c.UniversalClient, log)
	}
	return c, nil
}

// use makes rc the client c sends through, with c's hook that makes its pipelines wait
// for replicas.
func (c *Client) use(rc redis.UniversalClient) {
	c.wait = &waitHook{}
	rc.AddHook(c.wait)
	c.UniversalClient = rc
}

// pingOnce pings through probe, a throw-away client (made with retries off and one
// connection, so that a refused connection fails at once rather than after the crawl
// client's back-off), within 5 s, and closes it.
func pingOnce(ctx context.Context, probe redis.UniversalClient) error {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := probe.Ping(pctx).Err()
	_ = probe.Close()
	return err
}

// tuning points at the options of a go-redis client (single, Sentinel or cluster) that
// Connect sets the same way for each; a nil pointer is an option the client lacks.
type tuning struct {
	poolSize, readBuf, writeBuf, pipeRead, pipeWrite *int
	readTimeout, minBackoff, maxBackoff              *time.Duration
}

// tune sets the options t points at for o: the pool sized for the crawl's partitions
// unless the URL or o say otherwise, 16 KiB connection buffers (go-redis gives each
// connection 32 KiB each way, and each pipeline connection 128 KiB each way: several MB
// for a worker's pools, most of its steady heap; larger replies still work, in pieces),
// a read timeout longer than a blocking read's block time, and retries backing off from
// 50 ms to 1 s.
func (o ClientOptions) tune(t tuning) {
	if !strings.Contains(o.URL, "pool_size=") || *t.poolSize == 0 {
		*t.poolSize = defaultPoolSize(o.Partitions)
	}
	if o.PoolSize > 0 {
		*t.poolSize = o.PoolSize
	}
	for _, b := range []struct {
		v *int
		d int
	}{{t.readBuf, 16 << 10}, {t.writeBuf, 16 << 10}, {t.pipeRead, 32 << 10}, {t.pipeWrite, 32 << 10}} {
		if b.v != nil {
			setIfZero(b.v, b.d)
		}
	}
	if *t.readTimeout < 5*time.Second {
		*t.readTimeout = 10 * time.Second
	}
	*t.minBackoff, *t.maxBackoff = 50*time.Millisecond, time.Second
}

// pingError is the error of a first PING to addr (over TLS or not) that failed: a
// server that answered but refused the credentials is told apart from one that cannot
// be reached, and one that hung up on a plain connection may want TLS.
func pingError(addr string, overTLS bool, err error) error {
	msg := err.Error()
	switch {
	case !overTLS && (errors.Is(err, io.EOF) || strings.Contains(msg, "connection reset by peer")):
		// A TLS port reads the PING as a bad handshake and closes the connection.
		return fmt.Errorf("streams: redis at %s closed the connection at once: if it serves TLS, use a rediss:// url (see docs/operations/security.md): %w", addr, err)
	case strings.HasPrefix(msg, "WRONGPASS"), strings.Contains(msg, "invalid password"),
		strings.Contains(msg, "AUTH") && strings.Contains(msg, "without any password configured"):
		return fmt.Errorf("streams: redis at %s refused the user or password: check them in the URL (redis://user:password@host:port): %w", addr, err)
	case strings.HasPrefix(msg, "NOAUTH"):
		return fmt.Errorf("streams: redis at %s needs a password: give it in the URL (redis://:password@host:port): %w", addr, err)
	}
	return fmt.Errorf("streams: cannot reach redis at %s: %w", addr, err)
}

// defaultPoolSize is the pool of a process running a crawl of partitions partitions.
func defaultPoolSize(partitions int) int {
	if partitions > 1 {
		return DefaultPoolSize + 3*partitions
	}
	return DefaultPoolSize
}

// warnRiskySettings logs a warning for server settings that can drop crawl state.
func warnRiskySettings(ctx context.Context, rdb redis.UniversalClient, log *zap.Logger) {
	cfg, err := rdb.ConfigGet(ctx, "*").Result()
	if err != nil {
		// CONFIG is often renamed or disabled on managed Redis: say so once.
		log.Warn("cannot read redis config; check maxmemory-policy is noeviction and persistence is on", zap.Error(err))
		return
	}
	if p := cfg["maxmemory-policy"]; p != "" && p != "noeviction" {
		log.Warn("redis maxmemory-policy can evict crawl state (dedup set, streams); use noeviction",
			zap.String("maxmemory-policy", p))
	}
	if cfg["appendonly"] != "yes" && strings.TrimSpace(cfg["save"]) == "" {
		log.Warn("redis persistence is off (appendonly no, no save points): a redis restart loses the crawl")
	}
}

// noSchemeError is the error of a Redis URL without "://", with the URL it suggests:
// a scheme whose colon or slashes went missing is mended ("redis//127.0.0.1:7101" and
// "redis:/127.0.0.1:7101" mean redis://127.0.0.1:7101), anything else gets redis://
// in front. A password in the URL is shown as *** in both.
func noSchemeError(raw string) error {
	scheme, rest := "redis", raw
	for _, s := range []string{"rediss+cluster", "redis+cluster", "rediss", "redis"} {
		after, ok := strings.CutPrefix(raw, s)
		if ok && (strings.HasPrefix(after, "//") || strings.HasPrefix(after, ":/")) {
			scheme, rest = s, strings.TrimLeft(strings.TrimPrefix(after, ":"), "/")
			break
		}
	}
	given := raw
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		given = raw[:len(raw)-len(rest)] + "***" + rest[at:]
		rest = "***" + rest[at:]
	}
	return fmt.Errorf("streams: redis url %q has no scheme: use %s://%s (rediss:// for TLS, redis+cluster:// for a cluster)",
		given, scheme, rest)
}

// isNoGroup reports a NOGROUP error (the stream or its group was deleted under us).
func isNoGroup(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOGROUP")
}

// setIfZero sets *v to d when it is zero.
func setIfZero(v *int, d int) {
	if *v == 0 {
		*v = d
	}
}
