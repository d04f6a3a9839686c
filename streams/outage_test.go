package streams_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// The refusals come from a real server: a plain XADD and a write inside a script, both
// refused at maxmemory, are outages; a script's own error and a wrong type are not.
func TestIsWriteRefusedOnRealServerErrors(t *testing.T) {
	srv := streamstest.Start(t, "--maxmemory-policy", "noeviction")
	rdb := srv.Client()
	ctx := context.Background()
	if err := rdb.Set(ctx, "str", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	wrongType := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "str", Values: []string{"a", "b"}}).Err()
	scriptErr := rdb.Eval(ctx, "return redis.error_reply('bad page')", nil).Err()
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	defer rdb.ConfigSet(ctx, "maxmemory", "0")
	oomAdd := rdb.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"a", "b"}}).Err()
	oomScript := rdb.Eval(ctx, "redis.call('XADD', KEYS[1], '*', 'a', 'b') return 1", []string{"s"}).Err()
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"xadd at maxmemory", oomAdd, true},
		{"script write at maxmemory", oomScript, true},
		{"wrapped", fmt.Errorf("handlers: output of x: %w", oomScript), true},
		{"sentinel", fmt.Errorf("%w: x", streams.ErrWriteRefused), true},
		{"joined", errors.Join(errors.New("other"), oomAdd), true},
		{"wrong type", wrongType, false},
		{"script error", scriptErr, false},
		{"nil", nil, false},
	} {
		if c.err == nil && c.want {
			t.Fatalf("%s: the server returned no error", c.name)
		}
		if got := streams.IsWriteRefused(c.err); got != c.want {
			t.Errorf("%s: IsWriteRefused(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
