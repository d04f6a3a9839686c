package spiders

import (
	"fmt"
	"net/url"
	"strings"
)

// Login is a form a spider submits before its start URLs are fetched, so that the
// session cookie it gets back is sent with every request of the crawl (the shared cookie
// jar; with cookies: process, each fetch process logs in for itself).
//
// In YAML:
//
//	login:
//	  url: http://127.0.0.1:8080/login
//	  form: {user: alice, password: secret}   # sent as application/x-www-form-urlencoded
//	  method: POST                            # the default
type Login struct {
	// URL the form is sent to.
	URL string `yaml:"url"`
	// Form is the form's fields.
	Form map[string]string `yaml:"form"`
	// Method is POST (the default) or GET (the fields then go in the query).
	Method string `yaml:"method"`
	// Headers are sent with the login request only.
	Headers map[string]string `yaml:"headers"`
	// CookieJar is the cookie session the login is for; "" the default one.
	CookieJar string `yaml:"cookiejar"`
}

// Validate reports a login that cannot be sent.
func (l *Login) Validate() error {
	u, err := url.Parse(l.URL)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("spiders: login.url %q: want an absolute http(s) url", l.URL)
	}
	if m := strings.ToUpper(l.Method); m != "" && m != "POST" && m != "GET" {
		return fmt.Errorf("spiders: login.method %q: want POST or GET", l.Method)
	}
	return ValidateHeaders("login.headers", l.Headers)
}
