package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// The crawl summary and status show items_unchanged beside the other item counters,
// and only when there are some.
func TestUnchangedItemsShownWithTheItemCounters(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, 6} {
		st := &inspect.Status{Crawl: "shop", Stats: map[string]int64{"items_scraped": 14, "items_unchanged": n}}
		var summary, status bytes.Buffer
		printSummary(&summary, st, 0, time.Second, "")
		printStatus(&status, st)
		for name, out := range map[string]string{"summary": summary.String(), "status": status.String()} {
			has := strings.Contains(out, "items unchanged")
			if has != (n > 0) || (n > 0 && !regexp.MustCompile(`items unchanged\s+6\b`).MatchString(out)) {
				t.Errorf("%s with items_unchanged %d shows it: %v\n%s", name, n, has, out)
			}
		}
	}
}
