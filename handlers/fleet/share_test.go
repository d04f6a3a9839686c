package fleet

import "testing"

// TestShares: shares follow the weights, never below 1, and a run is restarted only
// when its share moves by 2x or more.
func TestShares(t *testing.T) {
	active := map[string]Crawl{"big": {Weight: 3}, "small": {Weight: 1}, "zero": {}}
	got := shares(active, 50)
	if got["big"] != 30 || got["small"] != 10 || got["zero"] != 10 {
		t.Errorf("shares of weights 3, 1, 0 in 50: %v, want big 30, small 10, zero 10", got)
	}
	if got := shares(active, 2); got["small"] != 1 || got["big"] != 1 {
		t.Errorf("shares in 2: %v, want at least 1 each", got)
	}
	for _, c := range []struct {
		had, now int
		want     bool
	}{{16, 16, false}, {16, 9, false}, {16, 8, true}, {8, 15, false}, {8, 16, true}, {1, 1, false}, {1, 2, true}} {
		if got := moved(c.had, c.now); got != c.want {
			t.Errorf("moved(%d, %d) = %v, want %v", c.had, c.now, got, c.want)
		}
	}
}
