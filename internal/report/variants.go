package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
)

// Table is rows of cells rendered as aligned text or as Markdown.
type Table struct {
	Header []string
	rows   [][]string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.rows = append(t.rows, cells) }

// Render writes the table, as Markdown or as aligned text.
func (t *Table) Render(w io.Writer, markdown bool) error {
	if markdown {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(t.Header, " | "), strings.Repeat("---|", len(t.Header)))
		for _, r := range t.rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  %s\n", strings.Join(t.Header, "\t"))
	for _, r := range t.rows {
		fmt.Fprintf(tw, "  %s\n", strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// metricFormat returns a metric's label and value format, as the
// catalogue declares them; a metric it does not know (a plan's own,
// read from a command's output) is shown by its name, in plain digits.
func metricFormat(metric string) (string, func(float64) string) {
	if d, ok := metrics.Describe(metric); ok {
		return d.Label, d.Format
	}
	return metric, plain
}

// writeVariants writes, per cell and compared metric, the table
// variant | median [95% CI] | ratio vs baseline [95% CI] | MDE | verdict.
func writeVariants(w io.Writer, r *analysis.Report, markdown bool) error {
	byCell := map[string][]analysis.ComparisonView{}
	var cells []string
	for _, c := range r.Comparisons {
		if _, ok := byCell[c.Cell]; !ok {
			cells = append(cells, c.Cell)
		}
		byCell[c.Cell] = append(byCell[c.Cell], c)
	}
	summaries := map[string]analysis.CellView{}
	for _, c := range r.Cells {
		summaries[c.Variant+"\x00"+c.Name] = c
	}
	if err := writePivot(w, r, cells, byCell, summaries, markdown); err != nil {
		return err
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
			if err := writeMetricTable(w, r, cell, m, byCell[cell], summaries, markdown); err != nil {
				return err
			}
		}
	}
	writeVerdictRule(w, r)
	return nil
}

// writeMetricTable writes one metric of one cell: each variant's median,
// its ratio to the baseline, the MDE and the verdict, and notes on what
// is unusual about a comparison.
func writeMetricTable(w io.Writer, r *analysis.Report, cell, m string, cmps []analysis.ComparisonView, summaries map[string]analysis.CellView, markdown bool) error {
	label, format := metricFormat(m)
	better := "higher is better"
	if lowerIsBetter(cmps, m) {
		better = "lower is better"
	}
	family := "primary: its verdicts are Holm-adjusted across the report"
	if r.Rounds != nil {
		family = "primary: its interval is a confidence sequence, valid at every round looked at"
	}
	if len(cmps) > 0 && !isPrimary(cmps, m) {
		family = "unadjusted"
	}
	heading := "\n%s — %s, %s\n"
	if markdown {
		heading = "\n### %s — %s, %s\n\n"
	}
	fmt.Fprintf(w, heading, cell, label, better+"; "+family)
	t := &Table{Header: []string{compared(r), "median [95% CI]", "ratio vs " + r.Baseline + " [95% CI]", "MDE", "verdict"}}
	baseCell := summaries[r.Baseline+"\x00"+cell]
	base := baseCell.Summary[m]
	t.Add(r.Baseline, cellMedian(baseCell, m, format), "", "", "baseline")
	var notes []string
	for _, c := range cmps {
		if c.Metric != m {
			continue
		}
		ownCell := summaries[c.Variant+"\x00"+cell]
		own := ownCell.Summary[m]
		verdict := verdictText(c.Comparison)
		if r.Colour && !markdown { // the last column: its escapes cannot misalign the others
			verdict = colour(c.Verdict, verdict)
		}
		t.Add(c.Variant, cellMedian(ownCell, m, format), estimate(c.Comparison, format), mde(c.Comparison), verdict)
		notes = append(notes, comparisonNotes(c, base, own)...)
	}
	if err := t.Render(w, markdown); err != nil {
		return err
	}
	if markdown && len(notes) > 0 {
		fmt.Fprintln(w) // a line right under a table is one of its rows on GitHub
	}
	for _, n := range notes {
		fmt.Fprintf(w, map[bool]string{false: "  %s\n", true: "- %s\n"}[markdown], n)
	}
	return nil
}

// comparisonNotes say what is unusual about a comparison: a side that
// failed, medians and estimate that disagree, rounds far from the rest.
func comparisonNotes(c analysis.ComparisonView, base, own stats.Summary) []string {
	var notes []string
	if c.Failed != "" {
		notes = append(notes, "not compared: "+c.Failed)
	}
	if why := disagreement(c, base, own); why != "" {
		notes = append(notes, why)
	}
	if c.Robust {
		notes = append(notes, fmt.Sprintf("%s: %d of %d rounds lie far from the rest (modified z-score beyond %.1f), so the estimate is the Hodges–Lehmann median of pairwise means of the per-round figures, with the signed-rank interval, not their mean; the slot regression is not fitted",
			c.Variant, c.Outliers, c.N, stats.OutlierZ))
	} else if c.Method == stats.MethodSequential && c.Outliers > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d of %d rounds lay far from the rest (modified z-score beyond %g) and were held at that bound (winsorized) before the sequence's mean, so one stalled run cannot widen every later look",
			c.Variant, c.Outliers, c.N, float64(stats.WinsorZ)))
	}
	return notes
}

// writeVerdictRule says how the verdicts were drawn.
func writeVerdictRule(w io.Writer, r *analysis.Report) {
	primaries := 0
	for _, c := range r.Comparisons {
		if c.Primary {
			primaries++
		}
	}
	if r.Rounds != nil {
		note := "\nverdicts: the rounds were looked at after each one, so each primary metric's interval is a 95%% confidence sequence (it holds at every look; its error rate is split over the report's %d primary comparisons) and its ratio the mean per-round ratio: faster/slower when it lies wholly beyond ±%.0f%%, same when wholly inside; " +
			"other metrics: fixed-rounds CIs, unadjusted, which stopping early makes optimistic; MDE is the difference the sequence would have called with 80%% probability at these rounds\n"
		fmt.Fprintf(w, note, primaries, 100*r.Threshold)
		fmt.Fprintln(w, roundsLine(r.Rounds))
		return
	}
	note := "\nverdicts: faster/slower when the 95%% CI lies wholly beyond ±%.0f%% and, for primary metrics, the Holm-adjusted p < 0.05 across the report's %d primary comparisons (other metrics: unadjusted); same when the CI lies wholly inside ±%.0f%%; " +
		"the ratio is the paired per-round estimate, adjusted for each run's slot in its round (counts: the per-round difference); " +
		"MDE is the smallest difference this rule — the warm-up check included — calls faster/slower with 80%% probability at the noise these rounds showed; " +
		"the rounds an inconclusive verdict names are an estimate from these rounds — `iolab experiment --until-decided` adds rounds until every primary comparison is decided\n"
	fmt.Fprintf(w, note, 100*r.Threshold, primaries, 100*r.Threshold)
}

// roundsLine says when an experiment that stops when decided stopped.
func roundsLine(v *analysis.RoundsView) string {
	switch {
	case v.Decided && v.Ran < v.Max:
		return fmt.Sprintf("stopped after %d rounds (of %d to %d): every primary comparison was decided", v.Ran, v.Min, v.Max)
	case v.Decided:
		return fmt.Sprintf("ran %d rounds (of %d to %d); every primary comparison is decided", v.Ran, v.Min, v.Max)
	case v.Ran < v.Max:
		return fmt.Sprintf("stopped after %d rounds (of %d to %d) before every primary comparison was decided (interrupted, or runs failed)", v.Ran, v.Min, v.Max)
	}
	return fmt.Sprintf("ran all %d rounds (of %d to %d) and some primary comparisons are still undecided: the rounds they would need are beside them; raise rounds.max, or lower the noise", v.Ran, v.Min, v.Max)
}

// colour wraps a verdict's text in its terminal colour: green faster, red
// slower, yellow inconclusive.
func colour(verdict, text string) string {
	code := map[string]string{stats.Faster: "32", stats.Slower: "31", stats.Inconclusive: "33", stats.Failed: "31"}[verdict]
	if code == "" {
		return text
	}
	return "\033[" + code + "m" + text + "\033[0m"
}

func lowerIsBetter(cs []analysis.ComparisonView, metric string) bool {
	for _, c := range cs {
		if c.Metric == metric {
			return c.LowerIsBetter
		}
	}
	return false
}

// writePivot writes, for a study of several cells (a branch x size
// study), one table of its primary metric: a row per cell, a column per
// variant — the baseline's median, the others' ratio to it and verdict.
func writePivot(w io.Writer, r *analysis.Report, cells []string, byCell map[string][]analysis.ComparisonView, summaries map[string]analysis.CellView, markdown bool) error {
	if len(cells) < 2 {
		return nil
	}
	var variants []string
	seen := map[string]bool{}
	for _, c := range r.Comparisons {
		if c.Primary && !seen[c.Variant] {
			seen[c.Variant] = true
			variants = append(variants, c.Variant)
		}
	}
	if len(variants) == 0 {
		return nil
	}
	if markdown {
		fmt.Fprintf(w, "\n### Primary metric by cell and variant\n\n")
	} else {
		fmt.Fprintf(w, "\nprimary metric by cell and variant (ratio to %s, verdict)\n", r.Baseline)
	}
	t := &Table{Header: append([]string{"cell", r.Baseline}, variants...)}
	for _, cell := range cells {
		var primary *analysis.ComparisonView
		row := make([]string, len(variants))
		for i := range byCell[cell] {
			c := byCell[cell][i]
			if !c.Primary {
				continue
			}
			primary = &byCell[cell][i]
			if k := slices.Index(variants, c.Variant); k >= 0 {
				row[k] = fmt.Sprintf("%.3f %s", c.Ratio, c.Verdict)
				if math.IsNaN(c.Ratio) {
					row[k] = c.Verdict
				}
			}
		}
		if primary == nil {
			continue
		}
		label, format := metricFormat(primary.Metric)
		base := summaries[r.Baseline+"\x00"+cell].Summary[primary.Metric]
		t.Add(append([]string{cell, format(base.Median) + " " + label}, row...)...)
	}
	return t.Render(w, markdown)
}

func isPrimary(cs []analysis.ComparisonView, metric string) bool {
	for _, c := range cs {
		if c.Metric == metric {
			return c.Primary
		}
	}
	return false
}

// estimate is the comparison's figure: a ratio with its interval, or for
// a count the difference.
func estimate(c stats.Comparison, format func(float64) string) string {
	switch c.Method {
	case stats.MethodNone:
		return "—"
	case stats.MethodTooFew:
		return fmt.Sprintf("— (%d paired rounds)", c.N)
	case stats.MethodSequential:
		if math.IsNaN(c.CI95[0]) {
			return fmt.Sprintf("— (%d paired rounds)", c.N)
		}
		return fmt.Sprintf("%s [%s, %s] sequence", RatioText(c.Ratio), RatioText(c.CI95[0]), RatioText(c.CI95[1]))
	case stats.MethodDifference, stats.MethodUnpairedDifference:
		return fmt.Sprintf("%s [%s, %s] difference", signed(c.Diff, format), signed(c.DiffCI[0], format), signed(c.DiffCI[1], format))
	}
	return fmt.Sprintf("%s [%s, %s]", RatioText(c.Ratio), RatioText(c.CI95[0]), RatioText(c.CI95[1]))
}

// RatioText prints a ratio with 3 decimals, and one past what an
// interval can mean — under 1/1000 or over 1000, or not a number — as a
// bound, not as a figure: "<0.001", ">1000", "—".
func RatioText(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case v < 0.001:
		return "<0.001"
	case v > 1000:
		return ">1000"
	}
	return fmt.Sprintf("%.3f", v)
}

// viewEstimate is a comparison's estimate, or why there is none.
func viewEstimate(c analysis.ComparisonView) string {
	if c.Failed != "" {
		return "not compared: " + c.Failed
	}
	_, format := metricFormat(c.Metric)
	return estimate(c.Comparison, format)
}

// signed formats a difference in the metric's unit, with its sign.
func signed(v float64, format func(float64) string) string {
	if v < 0 {
		return "-" + format(-v)
	}
	return "+" + format(v)
}

// mde prints the MDE; past 1000% (eleven times the baseline) it means
// only that these rounds cannot detect anything.
func mde(c stats.Comparison) string {
	switch {
	case math.IsNaN(c.MDE):
		return "—"
	case c.MDE > 10:
		return ">1000%"
	}
	return fmt.Sprintf("%.1f%%", 100*c.MDE)
}

func verdictText(c stats.Comparison) string {
	switch {
	case c.Method == stats.MethodTooFew:
		return fmt.Sprintf("%s (no interval: %d rounds with both runs are needed)", c.Verdict, stats.MinPairs)
	case c.Withheld == stats.WithheldWarmingUp:
		return c.Verdict + " (withheld: a side is still warming up, see the warnings)"
	case c.Withheld == stats.WithheldUncheckedWU:
		return fmt.Sprintf("%s (no look before %d rounds: fewer cannot tell a warm-up from a difference)", c.Verdict, stats.MinWarmupPairs)
	case c.Withheld == stats.WithheldSequential:
		return c.Verdict + " (withheld: sequential order, unprotected by randomisation)"
	case c.OutgrewWarmup:
		return c.Verdict + " (a side is still warming up, by less than this difference: its size is not settled)"
	case c.Verdict != stats.Inconclusive:
		return c.Verdict
	case c.RoundsNeeded > 0:
		return fmt.Sprintf("%s (about %d rounds would decide)", c.Verdict, c.RoundsNeeded)
	case c.RoundsNeeded < 0 && c.NearThreshold():
		return fmt.Sprintf("%s (the estimate is too close to the threshold: more than %d rounds)", c.Verdict, 100*c.N)
	case c.RoundsNeeded < 0:
		return fmt.Sprintf("%s (too noisy: one round varies by %.0f%%, and more than %d rounds would be needed)", c.Verdict, 100*c.RoundCV(), 100*c.N)
	}
	return c.Verdict
}

// disagreement explains, in one line, a ratio that points the other way
// from the medians printed beside it.
func disagreement(c analysis.ComparisonView, base, own stats.Summary) string {
	if (c.Method != stats.MethodRatio && c.Method != stats.MethodSequential && c.Method != stats.MethodUnpaired) || base.Median <= 0 || own.Median <= 0 {
		return ""
	}
	medians := own.Median / base.Median
	if (medians-1)*(c.Ratio-1) >= 0 || math.Abs(math.Log(medians)) < 0.01 || math.Abs(math.Log(c.Ratio)) < 0.01 {
		return ""
	}
	var why string
	switch {
	case (c.PairMedian-1)*(medians-1) > 0 && c.Robust:
		why = fmt.Sprintf("most rounds agree with the medians (the median per-round ratio is %.3f), the pairwise means of the rounds say otherwise", c.PairMedian)
	case (c.PairMedian-1)*(medians-1) > 0:
		why = fmt.Sprintf("most rounds agree with the medians (the median per-round ratio is %.3f), a few rounds far from the rest pull the mean the other way", c.PairMedian)
	case c.SlotFitted && math.Abs(c.SlotEffect) > 0.05:
		why = fmt.Sprintf("runs later in a round differed by %+.0f%% per slot, and the ratio is taken at equal slot", 100*c.SlotEffect)
	default:
		why = "the medians mix rounds run under different conditions (the target changed between rounds), which pairing each round cancels"
	}
	return fmt.Sprintf("%s: the ratio %.3f and the medians (%.3g) point different ways: %s; the interval accounts for it, the medians do not", c.Variant, c.Ratio, medians, why)
}

// cellMedian is medianCI of metric m of a cell, or, where no run of the
// cell measured it because every one failed, how many failed.
func cellMedian(c analysis.CellView, m string, format func(float64) string) string {
	if s := c.Summary[m]; s.N == 0 && c.Failed > 0 && c.Measured == 0 {
		return fmt.Sprintf("all %d runs failed", c.Failed)
	}
	return medianCI(c.Summary[m], format)
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
