package fetch

import (
	"testing"
	"time"
)

// rfcExample is the robots.txt of RFC 9309 §5.1.
const rfcExample = `User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
`

// TestRobotsRFC9309Examples: the examples of RFC 9309 (§2.2.2 percent-encoding,
// §2.2.3 special characters, §5.1 groups, §5.2 longest match) give the answers the RFC
// gives.
func TestRobotsRFC9309Examples(t *testing.T) {
	for _, tc := range []struct {
		name, robots, agent, path string
		want                      bool
	}{
		// §5.1: "*" for agents without a group of their own.
		{"5.1 * publications", rfcExample, "otherbot", "/publications/x", true},
		{"5.1 * example", rfcExample, "otherbot", "/example/page.html", false},
		{"5.1 * gif anywhere", rfcExample, "otherbot", "/images/a.gif", false},
		{"5.1 * gif not at the end", rfcExample, "otherbot", "/images/a.gif?x=1", true},
		{"5.1 * other", rfcExample, "otherbot", "/index.html", true},
		// foobot: two paths only, by the longest match.
		{"5.1 foobot page", rfcExample, "FooBot/2.1", "/example/page.html", true},
		{"5.1 foobot gif", rfcExample, "foobot", "/example/allowed.gif", true},
		{"5.1 foobot other", rfcExample, "foobot", "/example/other.html", false},
		{"5.1 foobot root", rfcExample, "foobot", "/", false},
		// barbot and bazbot share a group.
		{"5.1 barbot page", rfcExample, "barbot", "/example/page.html", false},
		{"5.1 bazbot page", rfcExample, "bazbot", "/example/page.html", false},
		{"5.1 bazbot other", rfcExample, "bazbot", "/example/x.gif", true},
		// quxbot: an empty group at the end allows everything.
		{"5.1 quxbot", rfcExample, "quxbot", "/example/page.html", true},
		// §5.2 longest match.
		{"5.2 allowed", "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n", "foobot", "/example/page/", true},
		{"5.2 disallowed", "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n", "foobot", "/example/page/disallowed.gif", false},
		{"5.2 longer allowed", "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n", "foobot", "/example/page/other.gif", true},
		// §2.2.2 percent-encoding: the RFC's table.
		{"2.2.2 query", "User-agent: *\nDisallow: /foo/bar?baz=quz\n", "x", "/foo/bar?baz=quz", false},
		{"2.2.2 utf-8 in the file", "User-agent: *\nDisallow: /foo/bar/ツ\n", "x", "/foo/bar/%E3%83%84", false},
		{"2.2.2 encoded in the file", "User-agent: *\nDisallow: /foo/bar/%E3%83%84\n", "x", "/foo/bar/%E3%83%84", false},
		{"2.2.2 encoded unreserved", "User-agent: *\nDisallow: /foo/bar/%62%61%7A\n", "x", "/foo/bar/baz", false},
		{"2.2.2 lower-case hex", "User-agent: *\nDisallow: /foo/bar/%e3%83%84\n", "x", "/foo/bar/%E3%83%84", false},
		// §2.2.3 special characters.
		{"2.2.3 comment", "User-agent: *\nDisallow: /a # comment in line\n# comment on its own line\n", "x", "/a/b", false},
		{"2.2.3 $ exact", "User-agent: *\nDisallow: /this/path/exactly$\n", "x", "/this/path/exactly", false},
		{"2.2.3 $ longer", "User-agent: *\nDisallow: /this/path/exactly$\n", "x", "/this/path/exactly/not", true},
		{"2.2.3 *", "User-agent: *\nDisallow: /this/*/exactly\n", "x", "/this/any/thing/exactly", false},
		{"2.2.3 %2A is a star", "User-agent: *\nDisallow: /path/file-with-a-%2A.html\n", "x", "/path/file-with-a-*.html", false},
		{"2.2.3 %2A is not any", "User-agent: *\nDisallow: /path/file-with-a-%2A.html\n", "x", "/path/file-with-a-b.html", true},
		{"2.2.3 %24 is a dollar", "User-agent: *\nDisallow: /path/foo-%24\n", "x", "/path/foo-$", false},
		// The cases.
		{"allow /$ is the root only", "User-agent: *\nDisallow: /\nAllow: /$\n", "x", "/dir/", false},
		{"allow /$ root", "User-agent: *\nDisallow: /\nAllow: /$\n", "x", "/", true},
		{"café vs caf%C3%A9", "User-agent: *\nDisallow: /café\n", "x", "/caf%C3%A9/x", false},
		{"%7Eadmin vs ~admin", "User-agent: *\nDisallow: /%7Eadmin\n", "x", "/~admin/z", false},
		{"~admin vs %7eadmin", "User-agent: *\nDisallow: /~admin\n", "x", "/%7eadmin/z", false},
		{"disallow before user-agent is skipped", "Disallow: /x\nUser-agent: *\nDisallow: /private/\n", "x", "/private/a", false},
		{"bad crawl-delay is skipped", "User-agent: *\nCrawl-delay: soon\nDisallow: /private/\n", "x", "/private/a", false},
		{"line without colon is skipped", "User-agent: *\nthis is not a rule\nDisallow: /private/\n", "x", "/private/a", false},
		{"allow wins a tie", "User-agent: *\nDisallow: /page\nAllow: /page\n", "x", "/page", true},
		{"groups of one agent combine", "User-agent: a\nDisallow: /1\n\nUser-agent: b\nDisallow: /2\n\nUser-agent: a\nDisallow: /3\n", "a", "/3", false},
		{"own group over *", "User-agent: *\nDisallow: /\n\nUser-agent: streamcrawl\nDisallow: /x\n", "streamcrawl (+https://github.com/streamcrawl/streamcrawl)", "/y", true},
		{"CR line ends", "User-agent: *\rDisallow: /private/\r", "x", "/private/a", false},
		{"BOM", "\xef\xbb\xbfUser-agent: *\nDisallow: /private/\n", "x", "/private/a", false},
		{"empty disallow allows", "User-agent: *\nDisallow:\n", "x", "/a", true},
		{"no group for us", "User-agent: other\nDisallow: /\n", "x", "/a", true},
		{"sitemap line does not end the agent lines", "User-agent: a\nSitemap: http://x/s.xml\nUser-agent: b\nDisallow: /p\n", "a", "/p", false},
	} {
		r := parseRobots([]byte(tc.robots), productToken(tc.agent), 0)
		if got := r.allowed(tc.path); got != tc.want {
			t.Errorf("%s: %s allowed = %v, want %v", tc.name, tc.path, got, tc.want)
		}
	}
}

// TestRobotsCrawlDelay: a Crawl-delay is read in seconds, fractions included; what is
// no number is none; one above the cap is cut to it and reported capped, 1e300
// included (it overflowed to no delay).
func TestRobotsCrawlDelay(t *testing.T) {
	for _, tc := range []struct {
		value  string
		want   time.Duration
		capped bool
	}{
		{"2", 2 * time.Second, false},
		{"0.5", 500 * time.Millisecond, false},
		{"soon", 0, false},
		{"-3", 0, false},
		{"NaN", 0, false},
		{"100000", 300 * time.Second, true},
		{"1e300", 300 * time.Second, true},
		{"+Inf", 0, false},
		{"300", 300 * time.Second, false},
	} {
		r := parseRobots([]byte("User-agent: *\nCrawl-delay: "+tc.value+"\n"), "x", 300*time.Second)
		if r.delay != tc.want || r.capped != tc.capped {
			t.Errorf("Crawl-delay %s: %v capped %v, want %v capped %v", tc.value, r.delay, r.capped, tc.want, tc.capped)
		}
	}
}
