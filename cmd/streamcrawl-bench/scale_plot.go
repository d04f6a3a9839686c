package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"strconv"
)

// writeScalePlot draws the scaling runs as a PNG: steady pages/s (blue, with dots)
// against fetch processes, and linear scaling from the first run (grey). Axis ticks
// are labelled with digits; docs/operations/sizing.md says what the axes are.
func writeScalePlot(path string, runs []scaleRun) error {
	const w, h, left, right, top, bottom = 640, 400, 70, 20, 20, 40
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	fill(img, img.Bounds(), color.RGBA{255, 255, 255, 255})
	maxN, maxY := 1, 1.0
	base := 0.0
	if len(runs) > 0 && runs[0].Fetchers > 0 {
		base = runs[0].Steady / float64(runs[0].Fetchers)
	}
	for _, r := range runs {
		maxN = max(maxN, r.Fetchers)
		maxY = max(maxY, r.Steady, base*float64(r.Fetchers))
	}
	step := niceStep(maxY / 5)
	maxY = math.Ceil(maxY/step) * step
	px := func(n float64) int { return left + int(n/float64(maxN)*float64(w-left-right)) }
	py := func(y float64) int { return h - bottom - int(y/maxY*float64(h-top-bottom)) }
	grid, axis := color.RGBA{225, 225, 225, 255}, color.RGBA{60, 60, 60, 255}
	for y := 0.0; y <= maxY+step/2; y += step {
		line(img, px(0), py(y), px(float64(maxN)), py(y), grid, false)
		label := strconv.Itoa(int(y))
		digits(img, left-8-len(label)*8, py(y)-5, label, axis)
	}
	for _, r := range runs {
		line(img, px(float64(r.Fetchers)), py(0), px(float64(r.Fetchers)), py(maxY), grid, false)
		label := strconv.Itoa(r.Fetchers)
		digits(img, px(float64(r.Fetchers))-len(label)*4, h-bottom+10, label, axis)
	}
	line(img, px(0), py(0), px(float64(maxN)), py(0), axis, false)
	line(img, px(0), py(0), px(0), py(maxY), axis, false)
	line(img, px(0), py(0), px(float64(maxN)), py(base*float64(maxN)), color.RGBA{150, 150, 150, 255}, true)
	blue := color.RGBA{30, 90, 200, 255}
	for i, r := range runs {
		x, y := px(float64(r.Fetchers)), py(r.Steady)
		fill(img, image.Rect(x-4, y-4, x+5, y+5), blue)
		if i > 0 {
			p := runs[i-1]
			thick(img, px(float64(p.Fetchers)), py(p.Steady), x, y, blue)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench-scale: plot: %w", err)
	}
	if err := png.Encode(f, img); err != nil {
		_ = f.Close()
		return fmt.Errorf("bench-scale: plot: %w", err)
	}
	return f.Close()
}

// niceStep rounds s up to 1, 2 or 5 times a power of ten.
func niceStep(s float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(max(s, 1))))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= s {
			return m * p
		}
	}
	return 10 * p
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

// line draws from (x0, y0) to (x1, y1), dashed when asked.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA, dashed bool) {
	n := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= n; i++ {
		if dashed && (i/6)%2 == 1 {
			continue
		}
		img.SetRGBA(x0+(x1-x0)*i/n, y0+(y1-y0)*i/n, c)
	}
}

// thick draws a line three pixels wide.
func thick(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	for d := -1; d <= 1; d++ {
		line(img, x0, y0+d, x1, y1+d, c, false)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// digitFont is a 3x5 bitmap of each digit, a row per 3 bits.
var digitFont = [10][5]uint8{
	{7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1},
	{7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7},
}

// digits writes s (digits only) at (x, y), each pixel of the font 2x2.
func digits(img *image.RGBA, x, y int, s string, c color.RGBA) {
	for i, ch := range s {
		if ch < '0' || ch > '9' {
			continue
		}
		for row, bits := range digitFont[ch-'0'] {
			for col := 0; col < 3; col++ {
				if bits&(4>>col) != 0 {
					fill(img, image.Rect(x+i*8+col*2, y+row*2, x+i*8+col*2+2, y+row*2+2), c)
				}
			}
		}
	}
}
