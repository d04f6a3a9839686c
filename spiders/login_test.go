package spiders

import (
	"strings"
	"testing"
)

func TestYAMLLoginStep(t *testing.T) {
	sp, _, err := Parse("login.yaml", []byte(`name: members
start_urls: [http://127.0.0.1:8080/members]
login:
  url: http://127.0.0.1:8080/login
  form: {user: alice, password: secret}
settings:
  cookies: shared
`))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Login == nil || sp.Login.URL != "http://127.0.0.1:8080/login" || sp.Login.Form["user"] != "alice" {
		t.Fatalf("login = %+v", sp.Login)
	}
	for bad, want := range map[string]string{
		"login: {url: /login}":                           "login.url",
		"login: {url: http://h/l, method: PUT}":          "login.method",
		"login: {url: http://h/l, unknown: 1}":           "unknown",
		"settings: {cookies: sometimes}":                 "settings.cookies",
		"settings: {headers: {\"Bad Name\": x}}":         "invalid header name",
		"settings: {user_agent: \"bot\\r\\nX-Evil: 1\"}": "user_agent",
	} {
		_, _, err := Parse("bad.yaml", []byte("name: x\nstart_urls: [http://h/]\n"+bad+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", bad, err, want)
		}
	}
}
