package conf

import (
	"testing"
	"time"
)

// TestPositive: zero and negative values take the default; a positive one stays.
func TestPositive(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want int }{{0, 7}, {-3, 7}, {1, 1}, {9, 9}} {
		v := c.in
		Positive(&v, 7)
		if v != c.want {
			t.Errorf("Positive(%d, 7) = %d, want %d", c.in, v, c.want)
		}
	}
	d := -time.Second
	Positive(&d, time.Minute)
	if d != time.Minute {
		t.Errorf("Positive(-1s, 1m) = %v, want 1m", d)
	}
}
