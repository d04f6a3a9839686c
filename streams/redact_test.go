package streams_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams"
)

// TestConnectErrorsHideTheURLPassword: whatever is wrong with a Redis URL (it does not
// parse, an option is bad, the server is not there), Connect's error says so without
// the password of its user info or of its password options, including where url.Parse
// and go-redis quote the input back.
func TestConnectErrorsHideTheURLPassword(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"redis://:Pw1secret@127.0.0.1:notaport",
		"redis://user:Pw1secret@[::1:6379",
		"redis://user:Pw1secret@127.0.0.1:6379%zz",
		"redis://user:Pw1secret @127.0.0.1:6379",
		"redis://us\ter:Pw1secret@127.0.0.1:6379",
		"redi$s://user:Pw1secret@127.0.0.1:6379",
		"redis:///user:Pw1secret@127.0.0.1:6379",
		"redis://user:Pw1secret@127.0.0.1:6379/0?master_name=m&password=Pw2secret&dial_timeout=x",
		"redis://user:Pw1secret@127.0.0.1:6379/0?master_name=m&sentinel_password=Pw2secret&x=1",
		"redis://user:Pw1secret@127.0.0.1:6379/0?password=Pw2secret&bogus=1",
		"redis+cluster://user:Pw1secret@127.0.0.1:6379,:bad/0?password=Pw2secret",
		"user:Pw1secret@127.0.0.1:6379?password=Pw2secret",
		"redis:user:Pw1secret@127.0.0.1:6379",
		"redis://user:Pw%211secret@127.0.0.1:1/0", // decoded: Pw!1secret
		"redis://user:Pw1secret@127.0.0.1:1/0",    // nothing listens on port 1
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		c, err := streams.Connect(ctx, streams.ClientOptions{URL: raw})
		cancel()
		if err == nil {
			_ = c.Close()
			t.Errorf("Connect(%q) = nil error, want one", raw)
			continue
		}
		for _, secret := range []string{"Pw1secret", "Pw2secret", "Pw%211secret", "Pw!1secret"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Connect(%q): error shows %q: %v", raw, secret, err)
			}
		}
		if !strings.Contains(err.Error(), "***") && !strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("Connect(%q): error says nothing of the URL: %v", raw, err)
		}
	}
}
