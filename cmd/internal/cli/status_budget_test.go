package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/streamcrawl/streamcrawl/streams/inspect"
)

// TestStatusShowsBudgetDropsAndTopHosts: status prints the requests dropped over the
// budget and the top hosts by use, and nothing of budgets for a crawl without one.
func TestStatusShowsBudgetDropsAndTopHosts(t *testing.T) {
	t.Parallel()
	st := &inspect.Status{Crawl: "c", Counts: map[string]int64{"dropped_budget": 3},
		Budget: []inspect.BudgetUse{{Key: "trap.example", Pages: 100, Bytes: 40000}, {Key: "shop.example", Pages: 30}}}
	var b bytes.Buffer
	printStatus(&b, st)
	var lines []string // each line's fields, one space apart
	for _, l := range strings.Split(b.String(), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	out := strings.Join(lines, "\n")
	for _, want := range []string{"\nBUDGET (dropped_budget 3) PAGES BYTES\n", "\ntrap.example 100 40000\n", "\nshop.example 30 0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	printStatus(&b, &inspect.Status{Crawl: "c", Counts: map[string]int64{}})
	if strings.Contains(b.String(), "BUDGET") {
		t.Errorf("status of a crawl without a budget shows one:\n%s", b.String())
	}
}
