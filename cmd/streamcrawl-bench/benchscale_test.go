package main

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSteadyRateIsThePaceBetweenTenAndNinetyPercent(t *testing.T) {
	// 100 pages: a slow start (10 in the first second), then 20 pages/s, then a tail.
	samples := []scaleSample{
		{500 * time.Millisecond, 4}, {1000 * time.Millisecond, 10}, {2000 * time.Millisecond, 30},
		{3000 * time.Millisecond, 50}, {4000 * time.Millisecond, 70}, {5000 * time.Millisecond, 90},
		{9000 * time.Millisecond, 100},
	}
	if got := steadyRate(samples, 100); got != 20 {
		t.Fatalf("steady rate %v, want 20", got)
	}
	if got := steadyRate(samples[:2], 100); got != 0 {
		t.Fatalf("steady rate of a run that never reached 90%% = %v, want 0", got)
	}
}

func TestScalePlotIsAPNG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scale.png")
	runs := []scaleRun{{Fetchers: 1, Steady: 150}, {Fetchers: 2, Steady: 290}, {Fetchers: 4, Steady: 560}, {Fetchers: 8, Steady: 700}}
	if err := writeScalePlot(path, runs); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The 4-fetcher point (blue) is drawn where its rate puts it.
	b := img.Bounds()
	blue := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); bl>>8 == 200 && r>>8 == 30 && g>>8 == 90 {
				blue++
			}
		}
	}
	if blue < 4*81 {
		t.Fatalf("%d blue pixels, want at least the 4 points' dots", blue)
	}
}
