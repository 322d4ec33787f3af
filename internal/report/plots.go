package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/scaling"
	"github.com/iolab/iolab/internal/stats"
)

// The plots of the HTML report, drawn by gonum/plot as SVG. Each takes
// the figures the text report prints (summaries, merged histograms, fits)
// and returns inline SVG, or "" when there is nothing to draw.

const (
	plotWidth  = 6.5 * vg.Inch
	plotHeight = 3.2 * vg.Inch
)

// figure is a plot as inline SVG with its legend, which the page writes
// in HTML under it: names of any length wrap there, and never cover the
// data.
type figure struct {
	Kind    string
	SVG     template.HTML
	Legend  []legendEntry
	Caption string
}

// legendEntry is a mark of a plot and what it stands for; Mark is dot,
// ring, box, line, dash or band.
type legendEntry struct {
	Label, Colour, Mark string
}

func entry(label string, c color.Color, mark string) legendEntry {
	r, g, b, _ := c.RGBA()
	return legendEntry{Label: label, Colour: fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8), Mark: mark}
}

// drawFigure renders p with its legend as a figure.
func drawFigure(p *plot.Plot, legend []legendEntry, h vg.Length) (figure, error) {
	svg, err := svgOf(p, plotWidth, h)
	return figure{SVG: svg, Legend: legend}, err
}

// svgOf draws p as an inline SVG element (no XML prolog). Text in it is
// escaped by the SVG writer.
func svgOf(p *plot.Plot, w, h vg.Length) (template.HTML, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:]
	}
	return template.HTML(s), nil
}

func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	return p
}

// unitTicks labels an axis in a unit (45.2k, 1.2ms, 3 GiB).
type unitTicks struct {
	format func(float64) string
	ticker plot.Ticker
}

func (u unitTicks) Ticks(min, max float64) []plot.Tick {
	ts := u.ticker.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = u.format(ts[i].Value)
		}
	}
	return ts
}

func metricTicks(metric string) func(float64) string {
	return func(v float64) string { return analysis.FormatMetric(metric, v) }
}

func linearAxis(a *plot.Axis, metric string) {
	var ticker plot.Ticker = plot.DefaultTicks{}
	if d, ok := metrics.Describe(metric); ok && (d.Unit == "B" || d.Unit == "B/s") {
		ticker = binaryTicks{}
	}
	a.Tick.Marker = unitTicks{format: metricTicks(metric), ticker: ticker}
}

// binaryTicks put a byte axis's ticks at round numbers of the binary unit
// its values are written in (256 MiB/s, not 268 MB/s's 256.0 MiB/s).
type binaryTicks struct{}

func (binaryTicks) Ticks(min, max float64) []plot.Tick {
	unit := 1.0
	for unit < 1<<60 && math.Max(math.Abs(min), math.Abs(max))/unit >= 999.5 {
		unit *= 1024
	}
	ts := plot.DefaultTicks{}.Ticks(min/unit, max/unit)
	for i := range ts {
		ts[i].Value *= unit
	}
	return ts
}

func logAxis(a *plot.Axis, format func(float64) string) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = unitTicks{format: format, ticker: fewDecadeTicks{}}
}

// variantColour is the i-th variant's colour in every plot.
func variantColour(i int) color.Color { return plotutil.Color(i) }

func finiteXY(x, y float64) bool {
	return !math.IsNaN(x) && !math.IsInf(x, 0) && !math.IsNaN(y) && !math.IsInf(y, 0)
}

// scatter adds points in a variant's colour.
func scatter(p *plot.Plot, xys plotter.XYs, i int, hollow bool) error {
	if len(xys) == 0 {
		return nil
	}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	s.GlyphStyle.Color = variantColour(i)
	s.GlyphStyle.Radius = vg.Points(2.2)
	s.GlyphStyle.Shape = draw.CircleGlyph{}
	if hollow {
		s.GlyphStyle.Shape = draw.RingGlyph{}
	}
	p.Add(s)
	return nil
}

// ciBars are medians with their 95% intervals as error bars.
type ciBars struct {
	plotter.XYs
	plotter.YErrors
}

func addCIBars(p *plot.Plot, bars ciBars, i int) error {
	// A metric a command printed as NaN has no median to draw.
	var ok ciBars
	for k, xy := range bars.XYs {
		if e := bars.YErrors[k]; finiteXY(xy.X, xy.Y) && finiteXY(e.Low, e.High) {
			ok.XYs, ok.YErrors = append(ok.XYs, xy), append(ok.YErrors, e)
		}
	}
	bars = ok
	if len(bars.XYs) == 0 {
		return nil
	}
	eb, err := plotter.NewYErrorBars(bars)
	if err != nil {
		return err
	}
	eb.LineStyle.Color = variantColour(i)
	eb.LineStyle.Width = vg.Points(1.5)
	eb.CapWidth = vg.Points(8)
	med, err := plotter.NewScatter(bars.XYs)
	if err != nil {
		return err
	}
	med.GlyphStyle.Shape = draw.BoxGlyph{}
	med.GlyphStyle.Color = variantColour(i)
	med.GlyphStyle.Radius = vg.Points(3)
	p.Add(eb, med)
	return nil
}

// stripGroup is one variant's runs of a cell.
type stripGroup struct {
	Name    string
	Values  []float64
	Summary stats.Summary
	colour  int // the variant's colour in every plot
}

// stripPlot draws every measured run of each variant as a point, and
// beside them the median with its 95% interval.
func stripPlot(metric string, groups []stripGroup) (figure, error) {
	label, _ := metricFormat(metric)
	p := newPlot("every run, with the median and its 95% interval", "", label)
	linearAxis(&p.Y, metric)
	var legend []legendEntry // the variants are named on the axis
	var ticks []plot.Tick
	drawn := false
	for i, g := range groups {
		var xys plotter.XYs
		for k, v := range g.Values {
			// A fixed spread, so the same data draws the same plot.
			x := float64(i) - 0.25 + 0.3*float64((k*37)%23)/22
			if finiteXY(x, v) {
				xys = append(xys, plotter.XY{X: x, Y: v})
			}
		}
		if err := scatter(p, xys, g.colour, false); err != nil {
			return figure{}, err
		}
		drawn = drawn || len(xys) > 0
		if g.Summary.N > 0 {
			bars := ciBars{XYs: plotter.XYs{{X: float64(i) + 0.2, Y: g.Summary.Median}}, YErrors: plotter.YErrors{{}}}
			if ci := g.Summary.CI95; ci != nil {
				bars.YErrors[0].Low, bars.YErrors[0].High = g.Summary.Median-ci[0], ci[1]-g.Summary.Median
			}
			if err := addCIBars(p, bars, g.colour); err != nil {
				return figure{}, err
			}
		}
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: g.Name})
	}
	if !drawn {
		return figure{}, nil
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.5, float64(len(groups))-0.5
	return drawFigure(p, legend, plotHeight)
}

// cdfGroup is one variant's merged latency histogram.
type cdfGroup struct {
	Name string
	H    *hdrhistogram.Histogram
}

// nines maps a cumulative fraction to the axis of a latency CDF that
// keeps the tail apart: 50% at 0.3, 90% at 1, 99% at 2, 99.9% at 3.
func nines(q float64) float64 { return -math.Log10(1 - q) }

// cdfPlot draws each variant's latency distribution: latency on a log
// axis, the fraction of operations at or below it on an axis that
// spreads the tail, with p50, p99 and p99.9 marked.
func cdfPlot(groups []cdfGroup) (figure, error) {
	p := newPlot("latency distribution (every operation of the measured runs)", "latency", "operations at or below")
	logAxis(&p.X, metricTicks("lat_ns"))
	var legend []legendEntry
	top := 1.0
	drawn := false
	for i, g := range groups {
		if g.H == nil || g.H.TotalCount() == 0 {
			continue
		}
		n := float64(g.H.TotalCount())
		var xys plotter.XYs
		for _, b := range g.H.CumulativeDistribution() {
			q := math.Min(float64(b.Count)/n, 1-1/(2*n))
			if x := float64(b.ValueAt); x > 0 {
				xys = append(xys, plotter.XY{X: x, Y: nines(q)})
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return figure{}, err
		}
		l.LineStyle.Color = variantColour(i)
		l.LineStyle.Width = vg.Points(1.5)
		p.Add(l)
		legend = append(legend, entry(g.Name, variantColour(i), "line"))
		var marks plotter.XYs
		for _, pct := range []float64{50, 99, 99.9} {
			if pct/100 > 1-1/n {
				continue // too few operations to know it
			}
			if v := float64(g.H.ValueAtQuantile(pct)); v > 0 {
				marks = append(marks, plotter.XY{X: v, Y: nines(pct / 100)})
			}
		}
		if err := scatter(p, marks, i, false); err != nil {
			return figure{}, err
		}
		top = math.Max(top, nines(1-1/(2*n)))
		drawn = true
	}
	if !drawn {
		return figure{}, nil
	}
	var ticks []plot.Tick
	for _, t := range []struct {
		q     float64
		label string
	}{{0, "0%"}, {0.5, "p50"}, {0.9, "p90"}, {0.99, "p99"}, {0.999, "p99.9"}, {0.9999, "p99.99"}, {0.99999, "p99.999"}} {
		if nines(t.q) <= top+0.01 {
			ticks = append(ticks, plot.Tick{Value: nines(t.q), Label: t.label})
		}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = 0, top
	return drawFigure(p, legend, plotHeight)
}

// axisLabel is label, or the metric's own label.
func axisLabel(metric, label string) string {
	if label != "" {
		return label
	}
	l, _ := metricFormat(metric)
	return l
}

// timePoint is a value at a moment of an experiment, of a variant.
type timePoint struct {
	At      time.Time
	Value   float64
	Variant int
	Warmup  bool
}

// timeScale is the unit of a time axis spanning d.
func timeScale(d time.Duration) (time.Duration, string) {
	switch {
	case d > 3*time.Hour:
		return time.Hour, "hours"
	case d > 3*time.Minute:
		return time.Minute, "minutes"
	}
	return time.Second, "seconds"
}

// runOrderPlot draws each run's value at the time it ran, coloured by
// variant, warm-up runs hollow: drift over the experiment shows as a
// slope that every variant shares.
func runOrderPlot(metric string, pts []timePoint, names []string, title string) (figure, error) {
	if len(pts) == 0 {
		return figure{}, nil
	}
	t0, t1 := pts[0].At, pts[0].At
	for _, q := range pts {
		if q.At.Before(t0) {
			t0 = q.At
		}
		if q.At.After(t1) {
			t1 = q.At
		}
	}
	unit, unitName := timeScale(t1.Sub(t0))
	label, _ := metricFormat(metric)
	p := newPlot(title, unitName+" since the first run", label)
	linearAxis(&p.Y, metric)
	var legend []legendEntry
	for i, name := range names {
		for _, warm := range []bool{false, true} {
			var xys plotter.XYs
			for _, q := range pts {
				x := float64(q.At.Sub(t0)) / float64(unit)
				if q.Variant == i && q.Warmup == warm && finiteXY(x, q.Value) {
					xys = append(xys, plotter.XY{X: x, Y: q.Value})
				}
			}
			if len(xys) == 0 {
				continue
			}
			if err := scatter(p, xys, i, warm); err != nil {
				return figure{}, err
			}
			if warm {
				legend = append(legend, entry(name+" (warm-up)", variantColour(i), "ring"))
			} else {
				legend = append(legend, entry(name, variantColour(i), "dot"))
			}
		}
	}
	return drawFigure(p, legend, plotHeight)
}

// secondsLine is a run's per-second values, at their wall-clock times.
type secondsLine struct {
	Variant int
	Points  []timePoint
}

// maxSecondPoints bounds the points a per-second plot draws: beyond it,
// consecutive seconds of a run are averaged.
const maxSecondPoints = 6000

// secondsPlot draws per-second values of every run as lines at their
// wall-clock times across the experiment.
func secondsPlot(metric, label, title string, lines []secondsLine, names []string) (figure, error) {
	total := 0
	var t0, t1 time.Time
	for _, l := range lines {
		total += len(l.Points)
		for _, q := range l.Points {
			if t0.IsZero() || q.At.Before(t0) {
				t0 = q.At
			}
			if q.At.After(t1) {
				t1 = q.At
			}
		}
	}
	if total == 0 {
		return figure{}, nil
	}
	step := (total + maxSecondPoints - 1) / maxSecondPoints
	unit, unitName := timeScale(t1.Sub(t0))
	p := newPlot(title, unitName+" since the first run", axisLabel(metric, label))
	linearAxis(&p.Y, metric)
	var legend []legendEntry
	seen := map[int]bool{}
	for _, l := range lines {
		var xys plotter.XYs
		for k := 0; k < len(l.Points); k += step {
			end := min(k+step, len(l.Points))
			var sum float64
			for _, q := range l.Points[k:end] {
				sum += q.Value
			}
			x := float64(l.Points[k].At.Sub(t0)) / float64(unit)
			if y := sum / float64(end-k); finiteXY(x, y) {
				xys = append(xys, plotter.XY{X: x, Y: y})
			}
		}
		if len(xys) == 0 {
			continue
		}
		if len(xys) == 1 { // a run of one full second: a dot
			if err := scatter(p, xys, l.Variant, false); err != nil {
				return figure{}, err
			}
		} else {
			ln, err := plotter.NewLine(xys)
			if err != nil {
				return figure{}, err
			}
			ln.LineStyle.Color = variantColour(l.Variant)
			ln.LineStyle.Width = vg.Points(1)
			p.Add(ln)
		}
		if !seen[l.Variant] && l.Variant < len(names) {
			legend = append(legend, entry(names[l.Variant], variantColour(l.Variant), "line"))
			seen[l.Variant] = true
		}
	}
	return drawFigure(p, legend, plotHeight)
}

// runSecondsPlot draws one run's per-second values from its start.
func runSecondsPlot(metric, label, title string, values []float64, variant int) (figure, error) {
	var xys plotter.XYs
	for i, v := range values {
		if finiteXY(float64(i), v) {
			xys = append(xys, plotter.XY{X: float64(i), Y: v})
		}
	}
	if len(xys) < 2 {
		return figure{}, nil // a line needs two seconds
	}
	p := newPlot(title, "seconds since the run began", axisLabel(metric, label))
	var legend []legendEntry
	linearAxis(&p.Y, metric)
	l, err := plotter.NewLine(xys)
	if err != nil {
		return figure{}, err
	}
	l.LineStyle.Color = variantColour(variant)
	l.LineStyle.Width = vg.Points(1.5)
	p.Add(l)
	p.Y.Min = math.Min(p.Y.Min, 0)
	return drawFigure(p, legend, 2.4*vg.Inch)
}

// scalePlot draws a cost against scale on log axes: each scale's median
// with its interval, the best model's curve, and the band where one run
// would land (95% prediction interval) out to the extrapolations.
func scalePlot(v analysis.ScaleView) (figure, error) {
	label, _ := metricFormat(v.Metric)
	p := newPlot(fmt.Sprintf("%s by %s", label, v.Axis), v.Axis, label)
	logAxis(&p.X, scaling.Format)
	logAxis(&p.Y, metricTicks(v.Metric))
	bars := ciBars{}
	for _, pt := range v.Points {
		s := pt.Summary
		if pt.N <= 0 || s.Median <= 0 {
			continue
		}
		lo, hi := s.Median, s.Median
		if s.CI95 != nil {
			lo, hi = s.CI95[0], s.CI95[1]
		}
		if lo <= 0 {
			lo = s.Median
		}
		bars.XYs = append(bars.XYs, plotter.XY{X: pt.N, Y: s.Median})
		bars.YErrors = append(bars.YErrors, struct{ Low, High float64 }{s.Median - lo, hi - s.Median})
	}
	if len(bars.XYs) == 0 {
		return figure{}, nil
	}
	if err := addCIBars(p, bars, 0); err != nil {
		return figure{}, err
	}
	legend := []legendEntry{entry("measured: median and 95% interval", variantColour(0), "box")}
	if v.Fit != nil && len(v.Fit.Fits) > 0 {
		lo, hi := v.Fit.Scales[0], v.Fit.Scales[len(v.Fit.Scales)-1]
		for _, e := range v.Fit.Fits[0].Extrapolations {
			hi = math.Max(hi, e.At)
			lo = math.Min(lo, e.At)
		}
		for k, f := range v.Fit.Fits {
			if k > 0 && !slices.Contains(v.Fit.Indistinct, f.Model) {
				continue
			}
			marks, err := addFit(p, f, lo, hi, k)
			if err != nil {
				return figure{}, err
			}
			legend = append(legend, marks...)
		}
	}
	return drawFigure(p, legend, plotHeight)
}

// addFit draws one model's curve from lo to hi; the best model (k = 0)
// also its prediction band.
func addFit(p *plot.Plot, f scaling.Fit, lo, hi float64, k int) ([]legendEntry, error) {
	const samples = 80
	var curve, upper, lower plotter.XYs
	for i := 0; i <= samples; i++ {
		n := lo * math.Pow(hi/lo, float64(i)/samples)
		e := f.Predict(n)
		if e.Value <= 0 || !finiteXY(n, e.Value) || e.PI95[0] <= 0 || !finiteXY(e.PI95[0], e.PI95[1]) {
			continue
		}
		curve = append(curve, plotter.XY{X: n, Y: e.Value})
		upper = append(upper, plotter.XY{X: n, Y: e.PI95[1]})
		lower = append(lower, plotter.XY{X: n, Y: e.PI95[0]})
	}
	if len(curve) < 2 {
		return nil, nil
	}
	var legend []legendEntry
	if k == 0 {
		band := append(plotter.XYs{}, upper...)
		for i := len(lower) - 1; i >= 0; i-- {
			band = append(band, lower[i])
		}
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return nil, err
		}
		poly.Color = color.NRGBA{R: 31, G: 119, B: 180, A: 40}
		poly.LineStyle.Width = 0
		p.Add(poly)
		legend = append(legend, entry("95% prediction band of the best model: where one run would land", poly.Color, "band"))
	}
	l, err := plotter.NewLine(curve)
	if err != nil {
		return nil, err
	}
	l.LineStyle.Color = variantColour(k + 1)
	l.LineStyle.Width = vg.Points(1.2)
	if k > 0 {
		l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
	if k == 0 {
		return append(legend, entry(f.Model+" (best)", l.LineStyle.Color, "line")), nil
	}
	return append(legend, entry(f.Model+" (as good: ΔAICc < 2)", l.LineStyle.Color, "dash")), nil
}

// historyPlot draws a cell's median [95% CI] per experiment, one colour
// per variant, with a dashed line before each change point.
func historyPlot(metric string, hs []analysis.HistoryView) (figure, error) {
	order, index, ticks := historyAxis(hs)
	lo, hi, floor := math.Inf(1), math.Inf(-1), math.Inf(1) // the medians' range, the lowest interval's end
	for _, h := range hs {
		for _, s := range h.Steps {
			m, low := s.Summary.Median, s.Summary.Median
			if s.Summary.CI95 != nil {
				low = s.Summary.CI95[0]
			}
			if finiteXY(m, low) {
				lo, hi, floor = math.Min(lo, m), math.Max(hi, m), math.Min(floor, low)
			}
		}
	}
	label, format := metricFormat(metric)
	p := newPlot("median and 95% interval per experiment", "experiment", label)
	linearAxis(&p.Y, metric)
	if floor > 0 && hi > 3*lo { // a 15x drop would flatten every other step on a linear axis
		logAxis(&p.Y, format)
		p.Title.Text += " (log scale)"
	}
	var legend []legendEntry
	for i, h := range hs {
		drawn, err := historyLine(p, h, i, index)
		if err != nil {
			return figure{}, err
		}
		legend = append(legend, drawn...)
	}
	if len(legend) == 0 {
		return figure{}, nil
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = -0.5, float64(len(order))-0.5
	if len(order) > 6 {
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	return drawFigure(p, legend, plotHeight)
}

// historyAxis is a history's x axis: the experiments of all variants in
// time order, each's place on it, and its tick, labelled by its note.
func historyAxis(hs []analysis.HistoryView) ([]string, map[string]int, []plot.Tick) {
	var order []string
	at := map[string]time.Time{}
	notes := map[string]string{}
	for _, h := range hs {
		for _, s := range h.Steps {
			if _, ok := at[s.Experiment]; !ok {
				order = append(order, s.Experiment)
			}
			at[s.Experiment] = s.At
			if len(s.Notes) > 0 && notes[s.Experiment] == "" {
				notes[s.Experiment] = s.Notes[0]
			}
		}
	}
	slices.SortStableFunc(order, func(a, b string) int { return at[a].Compare(at[b]) })
	index := map[string]int{}
	var ticks []plot.Tick
	for i, label := range experimentLabels(order, at, notes) {
		index[order[i]] = i
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: label})
	}
	return order, index, ticks
}

// historyLine draws one history (the i-th): its medians with their
// intervals, joined, and its change points; it returns their legend, none
// when it has nothing to draw.
func historyLine(p *plot.Plot, h analysis.HistoryView, i int, index map[string]int) ([]legendEntry, error) {
	bars := ciBars{}
	for _, s := range h.Steps {
		m := s.Summary.Median
		lo, hi := m, m
		if s.Summary.CI95 != nil {
			lo, hi = s.Summary.CI95[0], s.Summary.CI95[1]
		}
		if !finiteXY(m, lo) || !finiteXY(hi, 0) {
			continue
		}
		bars.XYs = append(bars.XYs, plotter.XY{X: float64(index[s.Experiment]) + 0.08*float64(i), Y: m})
		bars.YErrors = append(bars.YErrors, struct{ Low, High float64 }{m - lo, hi - m})
	}
	if len(bars.XYs) == 0 {
		return nil, nil
	}
	if err := addCIBars(p, bars, i); err != nil {
		return nil, err
	}
	l, err := plotter.NewLine(bars.XYs)
	if err != nil {
		return nil, err
	}
	l.LineStyle.Color = variantColour(i)
	p.Add(l)
	name := h.Variant
	if name == "" {
		name = h.Cell
	}
	legend := []legendEntry{entry(name, variantColour(i), "line")}
	for _, cp := range h.ChangePoints {
		x := float64(index[cp.Experiment]) - 0.5
		ln, err := plotter.NewLine(plotter.XYs{{X: x, Y: math.Min(cp.Before, cp.After)}, {X: x, Y: math.Max(cp.Before, cp.After)}})
		if err != nil {
			return nil, err
		}
		ln.LineStyle.Color = color.NRGBA{R: 200, A: 255}
		ln.LineStyle.Width = vg.Points(2)
		ln.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(ln)
		legend = append(legend, entry(fmt.Sprintf("change point of %s before %s: %s, p = %s", name, cp.Experiment, cp.Direction, pText(cp.P)), ln.LineStyle.Color, "dash"))
	}
	return legend, nil
}

// experimentLabels name experiments on a history's axis: by their note
// where they have one (VM-7: ...), else by date — the day alone when each
// has a day of its own, with the time when not, with seconds when two
// share a minute — so that no two read alike.
func experimentLabels(order []string, at map[string]time.Time, notes map[string]string) []string {
	layout := "01-02"
	for _, f := range []string{"01-02", "01-02 15:04", "01-02 15:04:05"} {
		layout = f
		seen, unique := map[string]bool{}, true
		for _, id := range order {
			k := at[id].Local().Format(f)
			unique = unique && !seen[k]
			seen[k] = true
		}
		if unique {
			break
		}
	}
	out := make([]string, len(order))
	seen := map[string]int{}
	for i, id := range order {
		l := at[id].Local().Format(layout)
		if n := notes[id]; n != "" {
			l = n
			if r := []rune(n); len(r) > 18 {
				l = string(r[:17]) + "…"
			}
		}
		if seen[l]++; seen[l] > 1 {
			l = fmt.Sprintf("%s (%d)", l, seen[l])
		}
		out[i] = l
	}
	return out
}

// fewDecadeTicks are a log axis's ticks: at every power of ten, as
// plot.LogTicks; where the range spans too few decades for those to
// name more than one value, at 1, 2 and 5 times them as well, every one
// labelled.
type fewDecadeTicks struct{}

func (fewDecadeTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.LogTicks{Prec: -1}.Ticks(min, max)
	labelled := 0
	for _, t := range ts {
		if t.Label != "" {
			labelled++
		}
	}
	if labelled >= 3 || min <= 0 || max/min > 1e4 {
		return ts
	}
	ts = nil
	for e := math.Floor(math.Log10(min)); math.Pow(10, e) <= max; e++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow(10, e); v >= min && v <= max {
				ts = append(ts, plot.Tick{Value: v, Label: "x"}) // unitTicks writes the label
			}
		}
	}
	return ts
}
