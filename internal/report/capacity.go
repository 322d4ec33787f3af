package report

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
)

// writeCurves writes each load–latency curve: per load, the rate it asked
// for and the one it reached, and its response-time percentiles, each
// median with its interval over the measured runs; then its knee.
func writeCurves(w io.Writer, r *analysis.Report, markdown bool) error {
	heading := "\n%s — %s response time by load%s\n"
	if markdown {
		heading = "\n### %s — %s response time by load%s\n\n"
	}
	rate := func(x float64) string { return analysis.FormatMetric("ops_per_s", x) }
	ns := func(x float64) string { return analysis.FormatMetric("lat_p99_ns", x) }
	median := func(s stats.Summary, format func(float64) string) string {
		if s.N == 0 {
			return "—"
		}
		return format(s.Median)
	}
	for _, v := range r.Curves {
		what := v.Cell
		if v.Variant != "" {
			what += " — " + v.Variant
		}
		flat := ""
		switch {
		case v.Base > v.Calibrated:
			flat = fmt.Sprintf(" (loads in %% of %s ops/s, the highest a variant reached flat out; %s's calibration runs reached %s)", rate(v.Base), v.Variant, rates(v.Calibrations, rate))
		case v.Base > 0:
			flat = fmt.Sprintf(" (loads in %% of %s ops/s, the highest its calibration runs reached flat out: %s)", rate(v.Base), rates(v.Calibrations, rate))
		}
		fmt.Fprintf(w, heading, what, v.Op, flat)
		t := &Table{Header: []string{"load", "offered ops/s", "achieved [95% CI]", "p50", "p99 [95% CI]", "p99.9", "late starts"}}
		for _, p := range v.Points {
			offered, late := "flat out", "—"
			if !p.FlatOut() {
				offered, late = rate(p.Offered), fmt.Sprintf("%.1f%%", p.LateStartPct)
			}
			p99 := medianCI(p.P99, ns)
			if p.FlatOut() {
				p99 += " (service)"
			}
			t.Add(p.Load, offered, medianCI(p.Rate, rate), median(p.P50, ns), p99, median(p.P999, ns), late)
		}
		if err := t.Render(w, markdown); err != nil {
			return err
		}
		if v.Knee != "" {
			for _, p := range v.Points {
				if p.Load == v.Knee {
					fmt.Fprintf(w, "  knee: %s (%s ops/s, p99 %s): past it, response time grows faster than the rate it buys\n", p.Load, rate(p.Rate.Median), ns(p.P99.Median))
				}
			}
		}
	}
	if len(r.Curves) > 0 {
		fmt.Fprintln(w, "\ncurves: each load is a share of the highest rate a variant's flat-out calibration runs reached ("+fmt.Sprint(store.CalibrationRuns)+" each, so that one unlucky run sets nothing; the same rates for every variant), run on a fixed schedule; its times count from each operation's intended start, so a late start's wait is in them (coordinated omission corrected); the flat-out load's are service times, from each actual start; medians over the measured runs, their 95% intervals with 6 runs or more; "+
			"knee: the load farthest below the line from the lowest load to the highest, with rate and log p99 each scaled to [0, 1] (Kneedle)")
	}
	return nil
}

// curvePlot draws the curves of one workload and kind of operation, every
// variant's on one plot: the achieved rate across, the response time up
// on a log scale — p99 as the median of the runs with its 95% interval,
// p50 and p99.9 as dashed lines — the knee ringed, and the rate flat out
// (a load on no schedule, whose times are service times) as a dotted
// upright line.
func curvePlot(vs []analysis.CurveView, variants []string, slos []analysis.SLOView) (figure, error) {
	if len(vs) == 0 {
		return figure{}, nil
	}
	p := newPlot(fmt.Sprintf("%s: %s response time by achieved rate", vs[0].Cell, vs[0].Op), "achieved ops/s", "response time")
	linearAxis(&p.X, "ops_per_s")
	logAxis(&p.Y, metricTicks("lat_p99_ns"))
	var legend []legendEntry
	span := [2]float64{math.Inf(1), 0} // the lowest and highest response time drawn
	flat := map[int]float64{}
	for _, v := range vs {
		vi := max(slices.Index(variants, v.Variant), 0)
		c := curveLinesOf(v, &span)
		if c.flat > 0 {
			flat[vi] = c.flat
		}
		if len(c.bars.XYs) == 0 {
			continue
		}
		if err := c.draw(p, vi); err != nil {
			return figure{}, err
		}
		legend = append(legend, entry(variantLabel(v.Variant)+": p99, median and 95% interval", variantColour(vi), "box"),
			entry(variantLabel(v.Variant)+": p50 and p99.9", variantColour(vi), "dash"))
		if len(c.knee) > 0 {
			legend = append(legend, entry(variantLabel(v.Variant)+": knee ("+v.Knee+")", variantColour(vi), "ring"))
		}
	}
	if len(legend) == 0 {
		return figure{}, nil
	}
	held, err := addSLOs(p, vs, variants, slos, &span)
	if err != nil {
		return figure{}, err
	}
	legend = append(legend, held...)
	for vi, x := range flat {
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: span[0]}, {X: x, Y: span[1]}})
		if err != nil {
			return figure{}, err
		}
		l.LineStyle.Color, l.LineStyle.Width = variantColour(vi), vg.Points(1)
		l.LineStyle.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		p.Add(l)
		legend = append(legend, entry(fmt.Sprintf("%s: flat out, %s ops/s", variantLabel(variants[vi]), analysis.FormatMetric("ops_per_s", x)), variantColour(vi), "dash"))
	}
	return drawFigure(p, legend, plotHeight)
}

// curveLines are one variant's curve: its p99 with intervals, its p50
// and p99.9, its knee, and its flat-out rate (0: none).
type curveLines struct {
	bars            ciBars
	p50, p999, knee plotter.XYs
	flat            float64
}

// curveLinesOf gathers a variant's curve, widening span to what it draws.
func curveLinesOf(v analysis.CurveView, span *[2]float64) curveLines {
	var c curveLines
	for _, pt := range v.Points {
		x, s := pt.Rate.Median, pt.P99
		if pt.FlatOut() {
			c.flat = x
			continue
		}
		if s.N == 0 || s.Median <= 0 {
			continue
		}
		lo, hi := s.Median, s.Median
		if s.CI95 != nil && s.CI95[0] > 0 {
			lo, hi = s.CI95[0], s.CI95[1]
		}
		c.bars.XYs = append(c.bars.XYs, plotter.XY{X: x, Y: s.Median})
		c.bars.YErrors = append(c.bars.YErrors, struct{ Low, High float64 }{s.Median - lo, hi - s.Median})
		span[0], span[1] = math.Min(span[0], lo), math.Max(span[1], hi)
		if pt.P50.Median > 0 {
			c.p50 = append(c.p50, plotter.XY{X: x, Y: pt.P50.Median})
			span[0] = math.Min(span[0], pt.P50.Median)
		}
		if pt.P999.Median > 0 {
			c.p999 = append(c.p999, plotter.XY{X: x, Y: pt.P999.Median})
			span[1] = math.Max(span[1], pt.P999.Median)
		}
		if pt.Load == v.Knee {
			c.knee = append(c.knee, plotter.XY{X: x, Y: s.Median})
		}
	}
	return c
}

// draw adds the variant's curve in its colour.
func (c curveLines) draw(p *plot.Plot, vi int) error {
	if err := addCIBars(p, c.bars, vi); err != nil {
		return err
	}
	for k, line := range []plotter.XYs{c.bars.XYs, c.p50, c.p999} {
		if err := addLine(p, line, vi, k > 0); err != nil {
			return err
		}
	}
	return scatter(p, c.knee, vi, true)
}

// addSLOs draws an objective on these operations' response times: its
// bound, and the rate each variant was shown to hold it at.
func addSLOs(p *plot.Plot, vs []analysis.CurveView, variants []string, slos []analysis.SLOView, span *[2]float64) ([]legendEntry, error) {
	var legend []legendEntry
	for k, o := range slos {
		if k == 0 {
			span[0], span[1] = math.Min(span[0], o.Below), math.Max(span[1], o.Below)
			left, right := math.Inf(1), 0.0
			for _, v := range vs {
				for _, pt := range v.Points {
					left, right = math.Min(left, pt.Rate.Median), math.Max(right, pt.Rate.Median)
				}
			}
			l, err := plotter.NewLine(plotter.XYs{{X: left, Y: o.Below}, {X: right, Y: o.Below}})
			if err != nil {
				return nil, err
			}
			l.LineStyle.Width, l.LineStyle.Dashes = vg.Points(1.5), []vg.Length{vg.Points(6), vg.Points(3)}
			p.Add(l)
			legend = append(legend, entry("SLO: "+o.SLO, color.Black, "dash"))
		}
		if o.Held > 0 {
			vi := max(slices.Index(variants, o.Variant), 0)
			if err := scatter(p, plotter.XYs{{X: o.Held, Y: o.Below}}, vi, true); err != nil {
				return nil, err
			}
			legend = append(legend, entry(fmt.Sprintf("%s: holds it up to %s ops/s", variantLabel(o.Variant), analysis.FormatMetric("ops_per_s", o.Held)), variantColour(vi), "ring"))
		}
	}
	return legend, nil
}

// addLine joins points in a variant's colour, dashed or not.
func addLine(p *plot.Plot, xys plotter.XYs, i int, dashed bool) error {
	if len(xys) < 2 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.LineStyle.Color, l.LineStyle.Width = variantColour(i), vg.Points(1)
	if dashed {
		l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l)
	return nil
}

// curveFigures are the curve plots of an experiment: one per workload and
// kind of operation, its variants together.
func curveFigures(r *analysis.Report, variants []string) ([]figure, error) {
	var keys []string
	byKey := map[string][]analysis.CurveView{}
	for _, v := range r.Curves {
		k := v.Cell + "\x00" + v.Op
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], v)
	}
	var out []figure
	for _, k := range keys {
		vs := byKey[k]
		var slos []analysis.SLOView
		for _, o := range r.SLOs {
			if o.Cell == vs[0].Cell && strings.HasPrefix(o.Metric, vs[0].Op+".response_") {
				slos = append(slos, o)
			}
		}
		f, err := curvePlot(vs, variants, slos)
		if err != nil {
			return nil, fmt.Errorf("curve plot of %s: %w", vs[0].Cell, err)
		}
		f.Kind, f.Caption = "curve", fmt.Sprintf("%s, %s: each load's achieved rate against its response time — from each operation's intended start, so queueing behind a late start is in it — the median of the runs; the dotted upright line is the rate flat out; the dashed level line an SLO on these times, ringed where each variant was shown to hold it", vs[0].Cell, vs[0].Op)
		out = appendFigure(out, f)
	}
	return out, nil
}

// writeSLOs writes each search for the highest rate an SLO allows: the
// loads it tried with what each decided, the bracket it ended with, and
// each variant against the baseline.
func writeSLOs(w io.Writer, r *analysis.Report, markdown bool) error {
	heading := "\n%s — highest rate at which %s holds%s\n"
	if markdown {
		heading = "\n### %s — highest rate at which %s holds%s\n\n"
	}
	rate := func(x float64) string { return analysis.FormatMetric("ops_per_s", x) }
	for _, v := range r.SLOs {
		format := func(x float64) string { return analysis.FormatMetric(v.Metric, x) }
		who := ""
		if v.Variant != "" {
			who = " — " + v.Variant
		}
		fmt.Fprintf(w, heading, v.Cell, v.SLO, who)
		t := &Table{Header: []string{"load", "offered ops/s", "achieved", "runs", v.Metric + " (mean) [95% sequence]", "verdict"}}
		for _, s := range v.Steps {
			value := "a run failed"
			if !s.Failed && !math.IsNaN(s.Ratio) {
				value = fmt.Sprintf("%s [%s, %s]", format(s.Ratio*v.Below), format(math.Max(s.CI95[0], 0)*v.Below), format(s.CI95[1]*v.Below))
			} else if !s.Failed {
				value = "—"
			}
			verdict := s.Verdict
			if verdict == "" {
				verdict = "(cut short)"
			}
			if s.Capped {
				verdict += " (workers at --max-concurrency)"
			}
			t.Add(fmt.Sprintf("%.3g%%", 100*s.Share), rate(s.Offered), rate(s.Achieved), fmt.Sprint(s.Runs), value, verdict)
		}
		if err := t.Render(w, markdown); err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s\n", sloAnswer(v))
		if len(v.Calibrations) > 0 {
			fmt.Fprintf(w, "  flat out, its calibration runs reached %s; the loads are shares of %s, the highest any variant reached\n", rates(v.Calibrations, rate), rate(v.Calibrated))
		}
		if capped := cappedSteps(v); capped != "" {
			fmt.Fprintf(w, "  %s\n", capped)
		}
		if short := shortSteps(v); short != "" {
			fmt.Fprintf(w, "  %s\n", short)
		}
		if v.ClientMissed > 0 {
			fmt.Fprintf(w, "  %d runs not counted: they missed the objective while iolab's own delay was over %.0f%% of their response time — the client, not the target; their loads ran again\n",
				v.ClientMissed, metrics.GenDelayShare)
		}
		if v.SetAside > 0 {
			fmt.Fprintf(w, "  %d runs set aside: they missed the objective while the machine starved iolab of CPU (a burst of other work, which slows the target beside it too); their loads ran again, at most %d a load — later ones count, the machine the target runs on\n",
				v.SetAside, stats.SLOSetAside)
		}
	}
	for _, c := range r.SLOComparisons {
		fmt.Fprintf(w, "  %s\n", sloComparison(c))
	}
	if len(r.SLOs) > 0 {
		fmt.Fprintf(w, "\nSLO searches: over shares of the highest rate any variant reached flat out (their calibration runs), from 62.5%% of it; while every load holds, the top of the range next (125%% at first: a closed-loop run's own measure of its rate falls short of what a schedule sustains), doubled each time it holds too, up to 10x; then a bisection between the highest load that held and the lowest that did not; each load's runs judged as they came by an always-valid 95%% confidence sequence for the mean of metric/bound: wholly below the bound it holds, wholly above it fails, straddling it at the plan's rounds undecided (the bisection goes below it; it is no upper end); a run whose operations failed or were cut at the end of the run fails its load; a run that missed the objective while the machine starved iolab of CPU is set aside and its load run again, at most %d a load; the search ends when the bracket is within the SLO's precision; between variants, the ratio of the middles of their brackets, and the range the brackets allow where the objective was shown to fail (? where it never was)\n", stats.SLOSetAside)
	}
	return nil
}

// sloComparison says how a variant's highest sustainable rate compares
// with the baseline's, in a line.
func sloComparison(c analysis.SLOComparison) string {
	pct := func(x float64) string { return fmt.Sprintf("%+.0f%%", 100*(x-1)) }
	between := "["
	if c.Low != nil {
		between += pct(*c.Low)
	} else {
		between += "?"
	}
	between += ", "
	if c.High != nil {
		between += pct(*c.High) + "]"
	} else {
		between += "?]"
	}
	switch c.Verdict {
	case analysis.SustainsMore:
		return fmt.Sprintf("%s sustains more ops/s than %s at %s: %s %s", c.Variant, c.Baseline, c.SLO, pct(c.Ratio), between)
	case analysis.SustainsLess:
		return fmt.Sprintf("%s sustains fewer ops/s than %s at %s: %s %s", c.Variant, c.Baseline, c.SLO, pct(c.Ratio), between)
	}
	return fmt.Sprintf("%s against %s at %s: %s %s, inconclusive: neither was shown to fail at a rate the other held at", c.Variant, c.Baseline, c.SLO, pct(c.Ratio), between)
}

// cappedSteps says which loads that did not hold ran with every worker
// iolab may add busy ("" when none): there the cap bound the load, and
// the target may keep more with a higher --max-concurrency.
func cappedSteps(v analysis.SLOView) string {
	var capped []string
	for _, s := range v.Steps {
		if s.Capped && s.Verdict != stats.Holds {
			capped = append(capped, analysis.FormatMetric("ops_per_s", s.Offered)+" ops/s")
		}
	}
	if len(capped) == 0 {
		return ""
	}
	return fmt.Sprintf("at %s every worker iolab may add was busy (--max-concurrency): the cap, not only the target, held that load back; raise --max-concurrency to tell them apart",
		strings.Join(capped, ", "))
}

// shortSteps says which loads' runs held too few operations for the
// objective's percentile to be more than their largest few ("" when
// none): the loads of a search are lengthened to hold enough where the
// kind's runs are of a runtime or a count.
func shortSteps(v analysis.SLOView) string {
	var short []string
	for _, s := range v.Steps {
		if s.FewestOps > 0 && s.FewestOps < v.MinOps {
			short = append(short, fmt.Sprintf("%s ops/s (%d)", analysis.FormatMetric("ops_per_s", s.Offered), s.FewestOps))
		}
	}
	if len(short) == 0 {
		return ""
	}
	return fmt.Sprintf("runs too short for %s: at %s a run held fewer than the %d operations its percentile needs, so it is about the run's largest few; give the workload a longer runtime (or count)",
		v.Metric, strings.Join(short, ", "), v.MinOps)
}

// sloAnswer says what a search found, in a line: a rate it sustains only
// where it was shown to hold, an upper end only where it was shown to
// fail, and a load left undecided said as that — no interval notation,
// for none of them is a confidence interval.
func sloAnswer(v analysis.SLOView) string {
	rate := func(x float64) string { return analysis.FormatMetric("ops_per_s", x) + " ops/s" }
	undecided := ""
	if v.Undecided > 0 {
		undecided = fmt.Sprintf("; undecided at %s (its runs straddled the bound: more rounds, or longer runs, decide it)", rate(v.Undecided))
	}
	switch {
	case !v.Done:
		return fmt.Sprintf("the search was cut short after %d runs: held up to %s so far", v.Runs, rate(v.Held))
	case v.Held == 0 && v.Failed > 0:
		return fmt.Sprintf("held at none of the loads tried: shown to fail at %s%s; %d runs", rate(v.Failed), undecided, v.Runs)
	case v.Held == 0:
		return fmt.Sprintf("held at none of the loads tried, and shown to fail at none%s; %d runs", undecided, v.Runs)
	case !v.Bounded:
		return fmt.Sprintf("holds up to %s — at every load tried, its range widened to %.0fx the flat-out rate (%s); %d runs", rate(v.Held), v.Top/v.Calibrated, rate(v.Calibrated), v.Runs)
	}
	failed := "shown to fail at no load tried"
	if v.Failed > 0 {
		failed = "shown to fail at " + rate(v.Failed)
	}
	return fmt.Sprintf("sustains %s (held there); %s%s; %d runs", rate(v.Held), failed, undecided, v.Runs)
}

// rates lists the calibration runs' rates, in the order they ran.
func rates(vs []float64, format func(float64) string) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = format(v)
	}
	return strings.Join(out, ", ")
}
