package clitest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/streamcrawl/streamcrawl/spiders"
)

// testRoot is a small command tree: streamcrawl [--log-level] {fetch [--crawl] [--until-done] [-c], dead {list}}.
func testRoot() *cobra.Command {
	run := func(*cobra.Command, []string) {}
	root := &cobra.Command{Use: "streamcrawl"}
	root.PersistentFlags().String("log-level", "info", "")
	fetch := &cobra.Command{Use: "fetch [SPIDER]", Run: run, Args: cobra.MaximumNArgs(1)}
	fetch.Flags().StringP("crawl", "c", "", "")
	fetch.Flags().Bool("until-done", false, "")
	dead := &cobra.Command{Use: "dead"}
	dead.AddCommand(&cobra.Command{Use: "list", Run: run})
	root.AddCommand(fetch, dead)
	return root
}

func TestCheckArgs(t *testing.T) {
	for args, want := range map[string]string{
		"fetch shop.yaml --crawl shop --until-done": "",
		"fetch --log-level debug -c shop --help":    "",
		"fetch -cshop -h":                           "",
		"--log-level=debug dead list":               "",
		"help dead list":                            "",
		"fetch --no-such-flag":                      "streamcrawl fetch: unknown flag --no-such-flag",
		"fetch -x":                                  "unknown shorthand flag -x",
		"dead list --crawl shop":                    "streamcrawl dead list: unknown flag --crawl",
		"dead purge":                                `streamcrawl dead: unknown command "purge"`,
		"fetchh a.yaml":                             `streamcrawl: unknown command "fetchh"`,
		"fetch a.yaml b.yaml":                       "accepts at most 1 arg",
		"help nope":                                 `unknown command "nope"`,
	} {
		got := CheckArgs(testRoot(), strings.Fields(args))
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("CheckArgs(%s) = %q, want %q", args, got, want)
		}
	}
}

func TestCheckCommands(t *testing.T) {
	page := ParsePage("docs/run.md", strings.Join([]string{
		"Run `streamcrawl fetch --no-such-flag` or `streamcrawl-bench bench --x`.", // 1
		"```sh", // 2
		"./streamcrawl fetch shop.yaml \\",
		"  --crawl shop --until-done &",
		"REDIS_URL=x go run ./cmd/streamcrawl fetch \\", // 5
		"  --until-done [--crawl NAME] [--bogus]",
		"echo $(/usr/local/bin/streamcrawl dead lsit) # streamcrawl --nope", // 7
		"```",
		"```console", // 9
		"$ streamcrawl fetch --help",
		"streamcrawl fetch --this-is-output",
		"$ sudo streamcrawl fetch -z", // 12
		"```",
		"```go", // 14
		"// streamcrawl fetch --not-shell",
		"```",
	}, "\n"))
	wantProblems(t, CheckCommands([]*Page{page}, map[string]*cobra.Command{"streamcrawl": testRoot()}),
		"docs/run.md:1: streamcrawl fetch: unknown flag --no-such-flag",
		"docs/run.md:5: streamcrawl fetch: unknown flag --bogus",
		`docs/run.md:7: streamcrawl dead: unknown command "lsit"`,
		"docs/run.md:12: unknown shorthand flag -z",
	)
}

func TestCheckMarkers(t *testing.T) {
	readme := ParsePage("README.md", "<!-- generated:commands -->\n| a |\n<!-- end:commands -->\n<!-- generated:flags -->\n<!-- generated:stale -->\n<!-- end:stale -->\n")
	docs := ParsePage("docs/cli.md", "x\n<!-- generated:commands -->\n<!-- end:commands -->\n<!-- end:flags -->\n```\n<!-- generated:settings -->\n```\n")
	wantProblems(t, CheckMarkers([]*Page{readme, docs}, []string{"commands", "flags", "settings"}),
		"docs/cli.md:2: generated table commands stands again (first at README.md:1)",
		"README.md:4: generated table flags lacks its one <!-- end:flags -->",
		"README.md:5: marker <!-- generated:stale --> of a table no test generates",
		"README.md:6: marker <!-- end:stale --> of a table no test generates",
		"README.md:1: no page has the generated table settings",
	)
}

func TestCheckDuplicateRows(t *testing.T) {
	keys := map[string]string{"concurrency": "settings", "headers": "settings", "fingerprint.headers": "settings",
		"fingerprint.body": "settings", "--crawl": "run-flags"}
	page := ParsePage("docs/x.md", strings.Join([]string{
		"<!-- generated:settings -->",
		"| `concurrency` | int |", // 2: generated, fine
		"<!-- end:settings -->",
		"",
		"| key | meaning |", // 5: header
		"|---|---|",
		"| `concurrency` | requests in flight |", // 7: duplicate
		"| `--crawl NAME` | the crawl |",         // 8: duplicate
		"| `settings.concurrency`, `--crawl` | both |", // 9: duplicate, both
		"| `concurrency: 64` | 1.2 s |",                // 10: a measured variant
		"| a test with `--crawl` | passes |",           // 11: prose
		"",
		"| `headers` | x |", // 13: under fingerprint
		"| `body` | y |",
		"",
		"| login key | |", // 16: login's keys: not about settings
		"|---|---|",
		"| `url` | |",
		"| `form` | |",
		"| `headers` | |",
		"```",
		"| `concurrency` | in a code block |",
		"```",
	}, "\n"))
	wantProblems(t, CheckDuplicateRows([]*Page{page}, keys),
		"docs/x.md:7: `concurrency` (table settings)",
		"docs/x.md:8: `--crawl` (table run-flags)",
		"docs/x.md:9: `--crawl` (table run-flags), `concurrency` (table settings)",
		"docs/x.md:13: `fingerprint.headers`",
		"docs/x.md:14: `fingerprint.body`",
	)
}

func TestSettingsTable(t *testing.T) {
	keys, err := SettingsKeys("../../../spiders")
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]SettingsKey{}
	for _, k := range keys {
		if _, dup := byKey[k.Key]; dup {
			t.Errorf("key %s listed twice", k.Key)
		}
		byKey[k.Key] = k
		if k.Meaning == "" {
			t.Errorf("key %s has no meaning (doc comment)", k.Key)
		}
	}
	// every yaml-tagged field, found by walking the types on their own
	var walk func(t reflect.Type, prefix string) []string
	walk = func(t reflect.Type, prefix string) []string {
		var out []string
		for i := 0; i < t.NumField(); i++ {
			tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			out = append(out, prefix+tag)
			ft := t.Field(i).Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Struct:
				out = append(out, walk(ft, prefix+tag+".")...)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				out = append(out, walk(ft.Elem(), prefix+tag+"[].")...)
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
				out = append(out, walk(ft.Elem(), prefix+tag+".<stream>.")...)
			}
		}
		return out
	}
	fields := walk(reflect.TypeOf(spiders.Settings{}), "")
	if len(fields) != len(keys) {
		t.Errorf("%d yaml fields, %d rows", len(fields), len(keys))
	}
	for _, f := range fields {
		if _, ok := byKey[f]; !ok {
			t.Errorf("yaml field %s has no row", f)
		}
	}
	for key, want := range map[string][2]string{ // key: type, default
		"concurrency":                {"int", "`32`"},
		"download_timeout":           {"duration", "`30s`"},
		"max_crawl_delay":            {"duration", "`5m`"},
		"max_item_size":              {"size", "`1MB`"},
		"obey_robots":                {"bool", "true"},
		"error_rate":                 {"number", "0.01"},
		"dedup":                      {"string", "exact"},
		"max_depth":                  {"int", ""},
		"budget.pages_per_host":      {"int", ""},
		"limits[].delay":             {"duration", ""},
		"fingerprint.drop_params":    {"list of string", ""},
		"retention":                  {"map of mapping", ""},
		"retention.<stream>.max_age": {"duration", ""},
		"headers":                    {"map of string", ""},
		"revisit":                    {"mapping", ""},
		"revisit.rules":              {"list of mapping", ""},
	} {
		if got := byKey[key]; got.Type != want[0] || got.Default != want[1] {
			t.Errorf("%s: type %q default %q, want %q %q", key, got.Type, got.Default, want[0], want[1])
		}
	}
	table, err := SettingsTable("../../../spiders")
	if err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(table, "\n"); rows != len(keys)+2 {
		t.Errorf("table has %d lines, want %d", rows, len(keys)+2)
	}
	if !strings.Contains(table, "| `partitions` | int | `1` | Splits the crawl's Redis keys into this many hash-tagged partitions (sc:{&lt;name>:&lt;p>}:...)") {
		t.Errorf("partitions row not escaped as expected:\n%s", table)
	}
}

func TestDocDefault(t *testing.T) {
	for doc, want := range map[string]string{
		"X is y. Default 30s.":                          "30s",
		"Default 8; -1 means no limit.":                 "8",
		"Default: 1/400 of the memory, at most 256 MB.": "1/400 of the memory, at most 256 MB",
		"Default false: a crawler must not.":            "false",
		"Default (nil) true; false takes POSTs.":        "true",
		"Rate. Default 0.01.":                           "0.01",
		`"exact" (the default: ...) or "set".`:          "exact",
		`"" (the default) is s2.`:                       "",
		"Uses DefaultUserAgent.":                        "",
	} {
		if got := docDefault(doc); got != want {
			t.Errorf("docDefault(%q) = %q, want %q", doc, got, want)
		}
	}
}
