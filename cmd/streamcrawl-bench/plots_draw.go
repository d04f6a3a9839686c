package main

import (
	"fmt"
	"image/color"
	"maps"
	"math"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette are the series colours of the plots, in order (colour-blind safe: Okabe-Ito).
var palette = []color.RGBA{
	{0, 114, 178, 255},   // blue
	{230, 159, 0, 255},   // orange
	{0, 158, 115, 255},   // green
	{204, 121, 167, 255}, // purple
	{86, 180, 233, 255},  // sky
	{213, 94, 0, 255},    // vermillion
}

var grey = color.RGBA{110, 110, 110, 255}

// newPlot is a plot in Liberation Sans (whose metrics are Arial's and Helvetica's, the
// fonts a browser shows it in when it lacks Liberation: the SVG does not embed it).
func newPlot() *plot.Plot {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	return plot.New()
}

// svgFonts names the fonts a browser may show the plots' text in, Liberation Sans's
// metric-compatible ones first.
var svgFonts = strings.NewReplacer("font-family:Liberation Sans;", "font-family:Liberation Sans,Arial,Helvetica,sans-serif;")

// writeSVG draws plots side by side on a w×h SVG canvas and writes it to path.
func writeSVG(path string, w, h vg.Length, plots ...*plot.Plot) error {
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	if len(plots) == 1 {
		plots[0].Draw(dc)
	} else {
		tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Centimeter, PadTop: vg.Millimeter * 2,
			PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
		for i, tile := range plot.Align([][]*plot.Plot{plots}, tiles, dc)[0] {
			plots[i].Draw(tile)
		}
	}
	var b strings.Builder
	if _, err := c.WriteTo(&b); err != nil {
		return fmt.Errorf("plots: %s: %w", path, err)
	}
	if err := os.WriteFile(path, []byte(svgFonts.Replace(b.String())), 0o644); err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	return nil
}

// dots are points drawn as filled circles of colour c.
func dots(xys plotter.XYs, c color.Color) (*plotter.Scatter, error) {
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
	return s, nil
}

// polyline is a line through xys of colour c, dashed when asked.
func polyline(xys plotter.XYs, c color.Color, dashed bool) (*plotter.Line, error) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.LineStyle.Color, l.LineStyle.Width = c, vg.Points(1.5)
	if dashed {
		l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	return l, nil
}

// median returns the median of vs (0 for none).
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(vs))
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// drawPeers draws peers.svg: pages/s and CPU seconds per 1000 pages of each crawler, side
// by side, a bar for its median over the rounds and a dot for each round.
func drawPeers(path string, r *record) error {
	p := r.Peers
	var names []string
	by := map[string][]peerRow{}
	for _, row := range p.Runs {
		if by[row.Crawler] == nil {
			names = append(names, row.Crawler)
		}
		by[row.Crawler] = append(by[row.Crawler], row)
	}
	panel := func(title, ylabel string, value func(peerRow) float64) (*plot.Plot, error) {
		pl := newPlot()
		pl.Title.Text, pl.Y.Label.Text = title, ylabel
		pl.X.Label.Text = fmt.Sprintf("bar: median of %d round(s); dot: a round", p.Rounds)
		pl.Add(plotter.NewGrid())
		top := 0.0
		for i, n := range names {
			var vs []float64
			var pts plotter.XYs
			for _, row := range by[n] {
				v := value(row)
				vs = append(vs, v)
				top = max(top, v)
				pts = append(pts, plotter.XY{X: float64(i), Y: v})
			}
			bar, err := plotter.NewBarChart(plotter.Values{median(vs)}, vg.Points(40))
			if err != nil {
				return nil, err
			}
			c := palette[i%len(palette)]
			bar.XMin, bar.Color, bar.LineStyle.Width = float64(i), color.NRGBA{c.R, c.G, c.B, 190}, 0
			d, err := dots(pts, color.Black)
			if err != nil {
				return nil, err
			}
			pl.Add(bar, d)
		}
		pl.NominalX(names...)
		pl.X.Min, pl.X.Max = -0.6, float64(len(names))-0.4
		pl.Y.Min, pl.Y.Max = 0, top*1.1
		return pl, nil
	}
	left, err := panel(fmt.Sprintf("Pages/s (%d pages of %d B, per-host %d)", p.Pages, p.PageSize, p.PerHost), "pages/s",
		func(r peerRow) float64 { return r.PagesPerS })
	if err != nil {
		return err
	}
	right, err := panel("CPU seconds per 1000 pages", "CPU-s / 1000 pages",
		func(r peerRow) float64 { return r.CPUSPer1000 })
	if err != nil {
		return err
	}
	return writeSVG(path, 10*vg.Inch, 4*vg.Inch, left, right)
}

// drawMemory draws million.svg: the crawl process's RSS (and its peak) and Redis's
// used_memory, in MiB, against the pages crawled.
func drawMemory(path string, r *record) error {
	m := r.Memory
	pl := newPlot()
	pl.Title.Text = fmt.Sprintf("Memory over a crawl of the demo shop (%d pages fetched, %.0f s)", m.PagesFetched, m.WallS)
	pl.X.Label.Text, pl.Y.Label.Text = "pages crawled (thousands)", "MiB"
	pl.Add(plotter.NewGrid())
	pl.Legend.Top, pl.Legend.Left, pl.Legend.XOffs, pl.Legend.YOffs = true, true, vg.Centimeter, -vg.Centimeter/2
	const mib = 1 << 20
	top := 1.0
	for i, s := range []struct {
		label  string
		value  func(memorySample) int64
		dashed bool
	}{
		{"crawl process RSS (VmRSS)", func(s memorySample) int64 { return s.RSSBytes }, false},
		{"crawl process peak RSS (VmHWM)", func(s memorySample) int64 { return s.HWMBytes }, true},
		{"Redis used_memory", func(s memorySample) int64 { return s.RedisUsedBytes }, false},
	} {
		var xys plotter.XYs
		for _, smp := range m.Samples {
			xys = append(xys, plotter.XY{X: float64(smp.Pages) / 1000, Y: float64(s.value(smp)) / mib})
			top = max(top, float64(s.value(smp))/mib)
		}
		c := palette[[]int{0, 0, 1}[i]]
		l, err := polyline(xys, c, s.dashed)
		if err != nil {
			return fmt.Errorf("plots: %s: %w", s.label, err)
		}
		pl.Add(l)
		pl.Legend.Add(s.label, l)
	}
	pl.Y.Min, pl.Y.Max = 0, top*1.35 // room for the legend
	return writeSVG(path, 7*vg.Inch, 4.5*vg.Inch, pl)
}

// drawPoliteness draws politeness.svg: span ÷ limit and the median gap at a host ÷ the
// delay against the hosts crawled (log scale), a dot for each run and a line through the
// medians by host count, with 1 (what the delay allows) as a grey dashed line.
func drawPoliteness(path string, runs []*broadRecord) error {
	pl := newPlot()
	pl.Title.Text = "Politeness at scale (bench-broad, 1 request in flight a host)"
	pl.X.Label.Text, pl.Y.Label.Text = "hosts crawled at once", "ratio (1 = exactly the delay)"
	pl.X.Scale, pl.X.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	pl.Add(plotter.NewGrid())
	pl.Legend.Top, pl.Legend.Left, pl.Legend.XOffs, pl.Legend.YOffs = true, true, vg.Centimeter, -vg.Centimeter/2
	hosts := map[int]bool{}
	for _, r := range runs {
		hosts[r.Hosts] = true
	}
	counts := slices.Sorted(maps.Keys(hosts))
	top := 1.2
	for i, s := range []struct {
		label string
		value func(*broadRecord) float64
	}{
		{"span ÷ limit ((pages−1)×delay)", func(r *broadRecord) float64 { return r.SpanOverLimit }},
		{"median gap at a host ÷ delay", func(r *broadRecord) float64 { return r.MedianGapOverDelay }},
	} {
		var pts, meds plotter.XYs
		for _, h := range counts {
			var vs []float64
			for _, r := range runs {
				if v := s.value(r); r.Hosts == h && !math.IsNaN(v) && !math.IsInf(v, 0) {
					vs = append(vs, v)
					pts = append(pts, plotter.XY{X: float64(h), Y: v})
					top = max(top, v)
				}
			}
			if len(vs) > 0 {
				meds = append(meds, plotter.XY{X: float64(h), Y: median(vs)})
			}
		}
		c := palette[i]
		d, err := dots(pts, c)
		if err != nil {
			return fmt.Errorf("plots: %s: %w", s.label, err)
		}
		l, err := polyline(meds, c, false)
		if err != nil {
			return fmt.Errorf("plots: %s: %w", s.label, err)
		}
		pl.Add(l, d)
		pl.Legend.Add(s.label, l, d)
	}
	lo, hi := float64(counts[0]), float64(counts[len(counts)-1])
	if lo == hi {
		lo, hi = lo/2, hi*2
	}
	one, err := polyline(plotter.XYs{{X: lo, Y: 1}, {X: hi, Y: 1}}, grey, true)
	if err != nil {
		return err
	}
	pl.Add(one)
	pl.Legend.Add("1: the delay exactly", one)
	pl.Y.Min, pl.Y.Max = 0, top*1.25 // room for the legend
	pl.X.Min, pl.X.Max = lo/1.5, hi*1.5
	return writeSVG(path, 7*vg.Inch, 4.5*vg.Inch, pl)
}
