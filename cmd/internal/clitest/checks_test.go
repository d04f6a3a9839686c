package clitest

import (
	"strings"
	"testing"
)

// wantProblems checks that probs are exactly want, each "FILE:LINE: part of the message".
func wantProblems(t *testing.T, probs []Problem, want ...string) {
	t.Helper()
	used := make([]bool, len(probs))
	for _, w := range want {
		at, msg, _ := strings.Cut(w, ": ")
		found := false
		for i, p := range probs {
			if !used[i] && strings.HasPrefix(p.String(), at+": ") && strings.Contains(p.Msg, msg) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("no problem %q", w)
		}
	}
	for i, p := range probs {
		if !used[i] {
			t.Errorf("unexpected problem %s", p)
		}
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Redis failover: Sentinel, replicas, durability": "redis-failover-sentinel-replicas-durability",
		"Where a page's cost goes":                       "where-a-pages-cost-goes",
		"The `max_depth` setting":                        "the-max_depth-setting",
		"*Bold* and _em_ and [a link](x.md)":             "bold-and-em-and-a-link",
		"A 25 KB page -- fast_path":                      "a-25-kb-page----fast_path",
		"Über café":                                      "über-café",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParsePage(t *testing.T) {
	p := ParsePage("x.md", "# A\n\n## B\n\n```sh\n# not a heading\n```\n\n## B\n\n  ```yaml not-a-spider\n  a: 1\n  ```\n<a name=\"n\"></a>\n")
	for _, a := range []string{"a", "b", "b-1", "n"} {
		if !p.Anchors[a] {
			t.Errorf("anchor %q missing: %v", a, p.Anchors)
		}
	}
	if p.Anchors["not-a-heading"] {
		t.Error("a comment in a code block made an anchor")
	}
	if len(p.Blocks) != 2 || p.Blocks[0].Line != 6 || p.Blocks[1].Lang() != "yaml" || !p.Blocks[1].HasWord(NotASpider) || p.Blocks[1].Lines[0] != "a: 1" {
		t.Errorf("blocks = %+v", p.Blocks)
	}
}

func TestCodeSpans(t *testing.T) {
	got := CodeSpans("a `b` c ``d ` e`` f `g")
	if len(got) != 2 || got[0].Text != "b" || got[1].Text != "d ` e" {
		t.Errorf("spans = %+v", got)
	}
}

func TestCheckLinks(t *testing.T) {
	pages, err := LoadPages("testdata/repo")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 2 || pages[1].Path != "docs/operations/redis.md" {
		t.Fatalf("pages = %v", pages)
	}
	wantProblems(t, CheckLinks("testdata/repo", pages),
		"README.md:7: no file docs/nope.md",
		"README.md:8: no heading or <a id> #no-such-heading in docs/operations/redis.md",
		"README.md:9: leads out of the repository",
		"README.md:10: no heading or <a id> #links-that-fail-1 in README.md",
		"README.md:11: no file docs/missing.png",
		"README.md:12: does not parse",
		"docs/operations/redis.md:9: leads out of the repository",
	)
}

func TestCheckYAMLBlocks(t *testing.T) {
	page := ParsePage("docs/spiders.md", strings.Join([]string{
		"# Spiders", // 1
		"```yaml",   // 2
		"name: shop",
		"start_urls: [http://127.0.0.1:8080/]",
		"```",
		"```yaml", // 6
		"settings:",
		"  concurrency: 8",
		"  no_such_key: 1", // 9
		"```",
		"```yml", // 11
		"login:",
		"  url: http://127.0.0.1:8080/login",
		"```",
		"```yaml not-a-spider", // 15
		"services: {redis: {image: redis}}",
		"```",
		"```yaml", // 18
		"name: shop",
		"start_urls: [http://127.0.0.1:8080/]",
		"settings: {download_timeout: 30}", // 21
		"```",
		"```yaml", // 23
		"settings: [",
		"```",
	}, "\n"))
	wantProblems(t, CheckYAMLBlocks([]*Page{page}),
		"docs/spiders.md:9: spiders: docs/spiders.md:9: settings: unknown key \"no_such_key\"",
		"docs/spiders.md:21: want a duration",
		"docs/spiders.md:24: ",
	)
}

func TestShellCommands(t *testing.T) {
	script := strings.Join([]string{
		`REDIS_URL=redis://x streamcrawl fetch a.yaml \`,
		`  --consumer "fetch 1" 2>&1 | tee log &   # a comment --no-flag`,
		`x=$(./streamcrawl status --crawl 'shop' --json) && echo "$x"; go run ./cmd/streamcrawl crawl > out.txt`,
		`cat <<EOF`,
		`streamcrawl --not-run`,
		`EOF`,
		`echo "a $(streamcrawl demo) b"`,
	}, "\n")
	var got []string
	for _, c := range ShellCommands(script) {
		got = append(got, strings.Join(append([]string{string(rune('0' + c.Line))}, c.Words...), " "))
	}
	want := []string{
		"1 REDIS_URL=redis://x streamcrawl fetch a.yaml --consumer fetch 1",
		"2 tee log",
		"3 x=",
		"3 ./streamcrawl status --crawl shop --json",
		"3 echo $x",
		"3 go run ./cmd/streamcrawl crawl",
		"4 cat",
		"7 echo a ",
		"7 streamcrawl demo",
		"7  b",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
