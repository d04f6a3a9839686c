//go:build linux || darwin

package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/handlers/fleet"
	"github.com/streamcrawl/streamcrawl/streams/streamstest"
)

// TestFleetDeleteAsksOnATerminal: delete of a running crawl on a terminal asks, naming
// the crawl's keys as SCAN counts them; "n" keeps everything, "y" deletes.
func TestFleetDeleteAsksOnATerminal(t *testing.T) {
	t.Parallel()
	srv := streamstest.Start(t)
	url, rdb := srv.URL(), srv.Client()
	sp := fleetSpider(t, "gamma")
	fleetCLI(t, "version 1 (queued)", "submit", sp, "--redis", url)
	fleetCLI(t, "queued 1 of 1 URLs", "seed", sp, "--redis", url)
	if _, err := fleet.New(rdb).Transition(context.Background(), "gamma", []fleet.State{fleet.Queued}, fleet.Running, ""); err != nil {
		t.Fatal(err)
	}
	keys, _ := crawlKeyCount(t, rdb, "gamma")
	question := fmt.Sprintf("delete running crawl gamma and its %d keys? [y/N]", keys)
	for _, answer := range []string{"n", "y"} {
		p := startTTY(t, "delete", "--redis", url, "--crawl", "gamma")
		if !p.waitFor(fleetRun, func(out string) bool { return strings.Contains(out, question) }) {
			t.Fatalf("delete on a terminal did not ask %q", question)
		}
		if _, err := p.tty.WriteString(answer + "\n"); err != nil {
			t.Fatal(err)
		}
		code, err := p.wait(fleetRun)
		if err != nil {
			t.Fatal(err)
		}
		own, registry := crawlKeyCount(t, rdb, "gamma")
		switch answer {
		case "n":
			if code != 1 || !strings.Contains(p.Output(), "crawl gamma not deleted") || own != keys || registry == 0 {
				t.Errorf("answered n: exit %d, %d keys of %d left, %d in the registry; want exit 1, all kept:\n%s", code, own, keys, registry, p.Output())
			}
			wantStates(t, url, "a delete answered n", "gamma=running v1")
		case "y":
			want := fmt.Sprintf("deleted crawl gamma (was running, version 1): %d keys removed", keys)
			if code != 0 || !strings.Contains(p.Output(), want) || own+registry != 0 {
				t.Errorf("answered y: exit %d, %d keys left, %d in the registry; want exit 0, %q, none left:\n%s", code, own, registry, want, p.Output())
			}
		}
	}
}
