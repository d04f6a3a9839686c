package streams_test

import (
	"context"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestConnectSaysWhatIsWrong: a URL without a scheme says which to use; a server that
// answers but refuses the password, or wants one, is not "cannot reach".
func TestConnectSaysWhatIsWrong(t *testing.T) {
	ctx := context.Background()
	srv := streamstest.Start(t)
	if err := srv.Client().ConfigSet(ctx, "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	connect := func(url string) error {
		c, err := streams.Connect(ctx, streams.ClientOptions{URL: url})
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	tests := []struct{ url, want string }{
		{srv.Addr, `streams: redis url "` + srv.Addr + `" has no scheme: use redis://` + srv.Addr + ` (rediss:// for TLS, redis+cluster:// for a cluster)`},
		{"redis://:wrong@" + srv.Addr + "/0", "streams: redis at " + srv.Addr + " refused the user or password: check them in the URL (redis://user:password@host:port): WRONGPASS"},
		{"redis://" + srv.Addr + "/0", "streams: redis at " + srv.Addr + " needs a password: give it in the URL (redis://:password@host:port): NOAUTH"},
	}
	for _, tt := range tests {
		err := connect(tt.url)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Connect(%s) (-want +got):\n-%s\n+%v", tt.url, tt.want, err)
		}
	}
	if err := connect("redis://:s3cret@" + srv.Addr + "/0"); err != nil {
		t.Errorf("with the password: %v", err)
	}
}
