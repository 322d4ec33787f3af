package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/iolab/iolab/internal/stats"
)

// table is rows of cells rendered as aligned text or as Markdown.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) render(w io.Writer, markdown bool) error {
	if markdown {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(t.header, " | "), strings.Repeat("---|", len(t.header)))
		for _, r := range t.rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\n", strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		fmt.Fprintf(tw, "  %s\n", strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// metricFormat returns a metric's label and value format.
func metricFormat(metric string) (string, func(float64) string) {
	for _, r := range rows {
		if r.key == metric {
			return r.label, r.format
		}
	}
	return metric, plain
}

// writeVariants writes, per cell and compared metric, the table
// variant | median [95% CI] | ratio vs baseline [95% CI] | MDE | verdict.
func writeVariants(w io.Writer, r *Report, markdown bool) error {
	byCell := map[string][]ComparisonView{}
	var cells []string
	for _, c := range r.Comparisons {
		if _, ok := byCell[c.Cell]; !ok {
			cells = append(cells, c.Cell)
		}
		byCell[c.Cell] = append(byCell[c.Cell], c)
	}
	summaries := map[string]CellView{}
	for _, c := range r.Cells {
		summaries[c.Variant+"\x00"+c.Name] = c
	}
	heading := "\n%s — %s, %s\n"
	if markdown {
		heading = "\n### %s — %s, %s\n\n"
	}
	for _, cell := range cells {
		var metrics []string
		seen := map[string]bool{}
		for _, c := range byCell[cell] {
			if !seen[c.Metric] {
				seen[c.Metric] = true
				metrics = append(metrics, c.Metric)
			}
		}
		for _, m := range metrics {
			label, format := metricFormat(m)
			better := "higher is better"
			if stats.LowerIsBetter(m) {
				better = "lower is better"
			}
			fmt.Fprintf(w, heading, cell, label, better)
			t := &table{header: []string{"variant", "median [95% CI]", "ratio vs " + r.Baseline + " [95% CI]", "MDE", "verdict"}}
			t.add(r.Baseline, medianCI(summaries[r.Baseline+"\x00"+cell].Summary[m], format), "", "", "baseline")
			for _, c := range byCell[cell] {
				if c.Metric != m {
					continue
				}
				verdict := c.Verdict
				if verdict == stats.Inconclusive && c.RoundsNeeded > 0 {
					verdict += fmt.Sprintf(" (about %d rounds would decide)", c.RoundsNeeded)
				}
				t.add(c.Variant, medianCI(summaries[c.Variant+"\x00"+cell].Summary[m], format),
					fmt.Sprintf("%.3f [%.3f, %.3f]", c.Ratio, c.CI95[0], c.CI95[1]),
					fmt.Sprintf("%.1f%%", 100*c.MDE), verdict)
			}
			if err := t.render(w, markdown); err != nil {
				return err
			}
		}
	}
	note := "\nverdicts: faster/slower when the 95%% CI lies wholly beyond ±%.0f%% and the Holm-adjusted p < 0.05 across all %d comparisons; same when it lies wholly inside; MDE is the smallest difference these rounds detect with 80%% power\n"
	fmt.Fprintf(w, note, 100*r.Threshold, len(r.Comparisons))
	return nil
}

func medianCI(s stats.Summary, format func(float64) string) string {
	if s.N == 0 {
		return "no runs"
	}
	if s.CI95 == nil {
		return format(s.Median) + " [n<6]"
	}
	return fmt.Sprintf("%s [%s, %s]", format(s.Median), format(s.CI95[0]), format(s.CI95[1]))
}
