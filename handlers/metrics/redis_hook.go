package metrics

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// RedisHook returns a go-redis hook that times every command and pipeline and counts
// failures (redis.Nil replies are answers, not failures). Add it with
// client.AddHook(m.RedisHook()); a nil *Metrics gives a hook that does nothing.
func (m *Metrics) RedisHook() redis.Hook { return redisHook{m} }

type redisHook struct{ m *Metrics }

func (h redisHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil && h.m != nil {
			h.m.redisErrors.WithLabelValues("dial", "network").Inc()
		}
		return c, err
	}
}

func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.m == nil {
			return next(ctx, cmd)
		}
		start := time.Now()
		err := next(ctx, cmd)
		h.m.observeRedis(cmd.Name(), time.Since(start), err)
		return err
	}
}

func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.m == nil {
			return next(ctx, cmds)
		}
		start := time.Now()
		err := next(ctx, cmds)
		h.m.observeRedis("pipeline", time.Since(start), err)
		return err
	}
}

func (m *Metrics) observeRedis(cmd string, took time.Duration, err error) {
	m.redisSeconds.WithLabelValues(cmd).Observe(took.Seconds())
	if kind := errorKind(err); kind != "" {
		m.redisErrors.WithLabelValues(cmd, kind).Inc()
	}
}

// errorKind classifies a round trip's error: "" for none or an expected answer (nil
// reply, NOSCRIPT that go-redis answers by sending the script), "reply" for an error
// the server answered, "network" for the rest (timeouts, refused or broken connections).
func errorKind(err error) string {
	var rerr redis.Error
	switch {
	case err == nil, errors.Is(err, redis.Nil), redis.HasErrorPrefix(err, "NOSCRIPT"):
		return ""
	case errors.As(err, &rerr):
		return "reply"
	}
	return "network"
}

// RedisErrorsFor returns the error counter of cmd and kind, for tests and checks.
func (m *Metrics) RedisErrorsFor(cmd, kind string) prometheus.Counter {
	return m.redisErrors.WithLabelValues(cmd, kind)
}
