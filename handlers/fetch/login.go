package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// loginWait bounds how long a fetch process waits for another one to log in.
const loginWait = time.Minute

// login submits the spider's login form with the fetcher's settings; the cookies the
// server sets (redirects included) go to the login's cookie session. A status of 400 or
// more is an error.
func (f *Fetcher) login(ctx context.Context, l *spiders.Login) error {
	if err := l.Validate(); err != nil {
		return err
	}
	form := url.Values{}
	for k, v := range l.Form {
		form.Set(k, v)
	}
	method := strings.ToUpper(l.Method)
	var hreq *http.Request
	var err error
	if method == http.MethodGet {
		u, _ := url.Parse(l.URL) // checked by Validate
		u.RawQuery = form.Encode()
		hreq, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	} else {
		hreq, err = http.NewRequestWithContext(ctx, http.MethodPost, l.URL, strings.NewReader(form.Encode()))
		if err == nil {
			hreq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	}
	if err != nil {
		return fmt.Errorf("fetch: login request: %w", err)
	}
	hreq.Header.Set("User-Agent", f.settings.UserAgent)
	for k, v := range f.settings.Headers {
		hreq.Header.Set(k, v)
	}
	for k, v := range l.Headers {
		hreq.Header.Set(k, v)
	}
	session := l.CookieJar
	if session == "" {
		session = defaultCookieSession
	}
	resp, err := f.http.do(ctx, f.http.following, hreq, session)
	if err != nil {
		return fmt.Errorf("fetch: login at %s: %w", spiders.RedactedURL(hreq.URL.String()), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 400 {
		return fmt.Errorf("fetch: login at %s: HTTP %d", spiders.RedactedURL(hreq.URL.String()), resp.StatusCode)
	}
	f.count("logins", 1)
	f.log.Info("logged in", zap.String("url", spiders.RedactedURL(hreq.URL.String())), zap.Int("status", resp.StatusCode))
	return nil
}

// Login runs the spider's login step l: once per crawl with the shared cookie jar (the
// first fetch process logs in, the others wait for it), once per process otherwise. The
// cookies the server sets (redirects included) go to the login's cookie session; an
// answer of 400 or more is an error.
func (f *Fetcher) Login(ctx context.Context, l *spiders.Login) error {
	if f.cookies == nil || f.cookies.mode != spiders.CookiesShared {
		return f.login(ctx, l)
	}
	rdb := f.rdb
	key := f.keys.Login
	won, err := rdb.SetNX(ctx, key, "pending", loginWait).Result()
	if err != nil {
		return fmt.Errorf("fetch: login lock: %w", err)
	}
	if won {
		if err := f.login(ctx, l); err != nil {
			_ = rdb.Del(context.WithoutCancel(ctx), key).Err() // let the next process try
			return err
		}
		if err := rdb.Set(ctx, key, "done", 0).Err(); err != nil {
			return fmt.Errorf("fetch: login done: %w", err)
		}
		return nil
	}
	deadline := time.Now().Add(loginWait)
	for {
		v, err := rdb.Get(ctx, key).Result()
		switch {
		case v == "done":
			return nil
		case errors.Is(err, redis.Nil): // the one logging in failed: try ourselves
			return f.Login(ctx, l)
		case err != nil:
			return fmt.Errorf("fetch: login state: %w", err)
		case time.Now().After(deadline):
			return errors.New("fetch: another fetch process is still logging in after a minute")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
