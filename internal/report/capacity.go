package report

import (
	"fmt"
	"io"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/stats"
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
		if v.Calibrated > 0 {
			flat = fmt.Sprintf(" (loads in %% of the %s ops/s its calibration run reached flat out)", rate(v.Calibrated))
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
		fmt.Fprintln(w, "\ncurves: each load is a share of the rate the flat-out calibration run reached, run on a fixed schedule; its times count from each operation's intended start, so a late start's wait is in them (coordinated omission corrected); the flat-out load's are service times, from each actual start; medians over the measured runs, their 95% intervals with 6 runs or more; "+
			"knee: the load farthest below the line from the lowest load to the highest, with rate and log p99 each scaled to [0, 1] (Kneedle)")
	}
	return nil
}
