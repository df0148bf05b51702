package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/modulo-testing/modulo/internal/words"
)

// chart is an SVG chart laid out in pixels: a plot area with axes and ticks, and bars, a
// line or marks in it. The template draws it; every position is computed here.
type chart struct {
	ID             string // the svg element's id
	Kind           string // data-kind, such as "divergence"
	Title          string
	W, H           float64
	Left, Top      float64 // the plot area's corner
	PlotW, PlotH   float64
	XLabel, YLabel string
	XTicks, YTicks []tick
	Bars           []bar
	Line           string // polyline points, "x,y x,y ..."
	// Line2 is a second curve and Legend names the two, when set.
	Line2  string
	Legend [2]string
	Marks  []mark
	Empty  string // said in the plot area when there is nothing to draw
}

type tick struct {
	Pos   float64 // pixels from the plot area's origin along its axis
	Label string
}

type bar struct {
	X, Y, W, H float64
	Title      string // tooltip
	Count      int
}

type mark struct {
	X, Y  float64
	Title string
}

// Bottom is the plot area's bottom edge, where the x axis runs.
func (c *chart) Bottom() float64 { return c.Top + c.PlotH }

// Right is the plot area's right edge.
func (c *chart) Right() float64 { return c.Left + c.PlotW }

func newChart(id, title string, w, h float64) *chart {
	return &chart{ID: id, Title: title, W: w, H: h, Left: 56, Top: 28, PlotW: w - 56 - 16, PlotH: h - 28 - 44}
}

// niceStep returns a step of 1, 2 or 5 times a power of ten that cuts span into at most n
// parts.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*pow >= raw {
			return m * pow
		}
	}
	return 10 * pow
}

// ticks returns ticks from 0 to max (rounded up to a whole step) along length pixels, and
// that rounded max; label formats a value.
func ticks(max float64, n int, length float64, label func(float64) string) ([]tick, float64) {
	step := niceStep(max, n)
	top := math.Ceil(max/step) * step
	if top == 0 {
		top = step
	}
	var ts []tick
	for v := 0.0; v <= top+step/2; v += step {
		ts = append(ts, tick{Pos: v / top * length, Label: label(v)})
	}
	return ts, top
}

// seconds labels a time in seconds as people read it: "850ms", "12s", "3m", "1.5h".
func seconds(s float64) string {
	unit, name := timeUnit(s)
	if s == 0 {
		return "0"
	}
	return trimZero(fmt.Sprintf("%.3g", s/unit)) + name
}

// timeUnit is the unit, in seconds, and its name, that suits a time of top seconds.
func timeUnit(top float64) (float64, string) {
	switch {
	case top < 1:
		return 0.001, "ms"
	case top < 120:
		return 1, "s"
	case top < 7200:
		return 60, "m"
	}
	return 3600, "h"
}

// timeTicks is ticks for a time axis whose largest time is max seconds: round steps in the
// unit that suits max, every tick labelled in it ("0", "1m", "2m", not "50s", "1.67m").
func timeTicks(max float64, n int, length float64) ([]tick, float64) {
	unit, name := timeUnit(max)
	ts, top := ticks(max/unit, n, length, func(v float64) string {
		if v == 0 {
			return "0"
		}
		return trimZero(fmt.Sprintf("%.3g", v)) + name
	})
	return ts, top * unit
}

func trimZero(s string) string {
	if strings.Contains(s, ".") && !strings.ContainsAny(s, "e") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// histogram lays out the values (in seconds) as a histogram of at most maxBins equal bins
// from 0 to the largest value.
func histogram(c *chart, values []float64, maxBins int) {
	c.YLabel = "runs"
	if len(values) == 0 {
		c.Empty = "nothing recorded"
		return
	}
	hi := 0.0
	for _, v := range values {
		hi = math.Max(hi, v)
	}
	bins := min(maxBins, int(math.Ceil(math.Sqrt(float64(len(values)))))+1)
	var top float64
	c.XTicks, top = timeTicks(hi, 5, c.PlotW)
	width := top / float64(bins)
	counts := make([]int, bins)
	for _, v := range values {
		counts[min(int(v/width), bins-1)]++
	}
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	yt, ytop := ticks(float64(most), 4, c.PlotH, func(v float64) string { return fmt.Sprintf("%g", v) })
	c.YTicks = yt
	bw := c.PlotW / float64(bins)
	for i, n := range counts {
		if n == 0 {
			continue
		}
		h := float64(n) / ytop * c.PlotH
		c.Bars = append(c.Bars, bar{
			X: c.Left + float64(i)*bw + 1, Y: c.Bottom() - h, W: bw - 2, H: h, Count: n,
			Title: fmt.Sprintf("%d %s from %s to %s", n, words.Plural(n, "run", "runs"), seconds(float64(i)*width), seconds(float64(i+1)*width)),
		})
	}
}
