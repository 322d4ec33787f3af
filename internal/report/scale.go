package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/scaling"
)

// writeScales writes each scale fit: the costs by scale, the models with
// their exponents, residuals and extrapolations, and what not to trust.
func writeScales(w io.Writer, r *analysis.Report, markdown bool) error {
	heading := "\n%s %s by %s\n"
	if markdown {
		heading = "\n### %s %s by %s\n\n"
	}
	for _, v := range r.Scales {
		label, _ := metricFormat(v.Metric)
		if v.Metric == "cpu_s" {
			label = "CPU (user + sys)"
		}
		format := func(x float64) string { return analysis.FormatMetric(v.Metric, x) }
		what := v.Cell + " —" // and the variant, when there are some
		if v.Variant != "" {
			what = v.Cell + " — " + v.Variant + ","
		}
		fmt.Fprintf(w, heading, what, label, v.Axis)
		t := &Table{Header: []string{v.Axis, "median [95% CI]", "per " + strings.TrimSuffix(v.Axis, "s")}}
		for _, p := range v.Points {
			t.Add(scaling.Format(p.N), medianCI(p.Summary, format), perItem(v.Metric, p.PerItem))
		}
		if err := t.Render(w, markdown); err != nil {
			return err
		}
		if v.Error != "" {
			fmt.Fprintf(w, "  no fit: %s\n", v.Error)
			continue
		}
		fmt.Fprintln(w)
		header := []string{"model", "exponent [95% CI]", "ΔAICc", "residuals by " + v.Axis}
		for _, e := range v.Fit.Across {
			header = append(header, fmt.Sprintf("at %g [95%% PI]", e.At))
		}
		t = &Table{Header: header}
		for _, f := range v.Fit.Fits {
			exp := fmt.Sprintf("%.3f", f.Exponent)
			if !math.IsNaN(f.ExponentCI[0]) {
				exp += fmt.Sprintf(" [%.3f, %.3f]", f.ExponentCI[0], f.ExponentCI[1])
			} else if f.Model == scaling.NLogN {
				exp += " (n·log n)"
			}
			row := []string{f.Model, exp, fmt.Sprintf("%.1f", f.DeltaAICc), f.Pattern}
			for _, e := range f.Extrapolations {
				row = append(row, fmt.Sprintf("%s [%s, %s]", analysis.FormatMetric(v.Metric, e.Value), analysis.FormatMetric(v.Metric, e.PI95[0]), analysis.FormatMetric(v.Metric, e.PI95[1])))
			}
			t.Add(row...)
		}
		if err := t.Render(w, markdown); err != nil {
			return err
		}
		for _, e := range v.Fit.Across {
			if len(v.Fit.Indistinct) > 1 {
				fmt.Fprintf(w, "  at %g, across the models the data cannot choose between: %s to %s\n", e.At,
					analysis.FormatMetric(v.Metric, e.PI95[0]), analysis.FormatMetric(v.Metric, e.PI95[1]))
			}
		}
		for _, wn := range v.Fit.Warnings {
			fmt.Fprintf(w, "  ! %s\n", wn)
		}
	}
	if len(r.Scales) > 0 {
		fmt.Fprintln(w, "\nscale fits: every model fitted to every run by least squares on the log scale, and ranked by AICc on the same misses; exponent = b of the power laws (how the cost grows past the start-up), 1 for linear, 1 + 1/ln n at the largest scale for n·log n; its interval and the prediction intervals (where one run would land) from the bootstrap over rounds, which does not assume the model; ΔAICc under 2: the data cannot tell the model from the best; residuals: + or - where the runs at a scale lie above or below the curve beyond chance (a model that is right marks a scale in 1 experiment of 20)")
	}
	return nil
}

// perItem formats the cost of one unit of scale.
func perItem(metric string, v float64) string { return analysis.FormatMetric(metric, v) }
