package newssite_test

import (
	"testing"
	"time"

	"github.com/streamcrawl/streamcrawl/spiders/newssite"
)

func TestPagesChangeOnTheirSchedules(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newssite.New(start, 1, 1, 1)
	at := start.Add(90*time.Minute + 30*time.Second)
	want := []int64{90, 1, 0}
	for i, p := range s.Pages {
		if v := s.Version(p, at); v != want[i] {
			t.Fatalf("%s at 1h30m30s: version %d, want %d", p.Path, v, want[i])
		}
	}
	if c := s.ChangedAt(s.Pages[1], 1); !c.Equal(start.Add(time.Hour)) {
		t.Fatalf("hourly page's first change at %v, want 1h after start", c.Sub(start))
	}
}
