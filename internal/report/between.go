package report

import (
	"fmt"
	"io"

	"github.com/iolab/iolab/internal/analysis"
)

// WriteBetween prints a Between as a table per cell: metric, A's and B's
// medians, B/A with its interval, the verdict.
func WriteBetween(w io.Writer, bt *analysis.Between, markdown bool) error {
	fmt.Fprintf(w, "%s (B) against %s (A), cell by cell; threshold ±%.0f%%\n", bt.B, bt.A, 100*bt.Threshold)
	t := &Table{Header: []string{"cell", "metric", "A median", "B median", "B/A [95% CI]", "verdict"}}
	for i, c := range bt.Comparisons {
		name := c.Cell
		if c.Variant != "" {
			name = c.Variant + "/" + c.Cell
		}
		label, _ := metricFormat(c.Metric)
		t.Add(name, label, analysis.FormatMetric(c.Metric, bt.Medians[i][0]), analysis.FormatMetric(c.Metric, bt.Medians[i][1]),
			estimate(c.Comparison, func(v float64) string { return analysis.FormatMetric(c.Metric, v) }), verdictText(c.Comparison))
	}
	if err := t.Render(w, markdown); err != nil {
		return err
	}
	for _, c := range bt.OnlyA {
		fmt.Fprintf(w, "  only in A: %s\n", c)
	}
	for _, c := range bt.OnlyB {
		fmt.Fprintf(w, "  only in B: %s\n", c)
	}
	fmt.Fprintln(w, "\nunpaired: runs of two experiments share no rounds, so each metric is compared by Welch's t-interval of the log values (counts: of the values) — what changed between the two experiments (the machine, the target's state, the time of day) is in the ratio, and only the runs' own noise in the interval; to tell variants apart, run them as variants of one experiment. Primary metrics: Holm-adjusted across the cells")
	return nil
}
