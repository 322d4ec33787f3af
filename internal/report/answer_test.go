package report

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/stats"
)

// Each kind of comparison is said in words a reader acts on: which way,
// by how much, the interval in the same words, and the verdict.
func TestAnswerText(t *testing.T) {
	t.Parallel()
	view := func(metric string, c stats.Comparison) analysis.ComparisonView {
		return analysis.ComparisonView{Cell: "c", Variant: "b", Baseline: "a", Metric: metric, Primary: true, Comparison: c}
	}
	for _, tc := range []struct {
		c    analysis.ComparisonView
		want string
	}{
		{view("wall_s", stats.Comparison{Method: stats.MethodRatio, Ratio: 0.87, CI95: [2]float64{0.80, 0.95}, Verdict: stats.Faster}),
			"13% less wall time than a [5.0%, 20%], faster"},
		{view("ops_per_s", stats.Comparison{Method: stats.MethodRatio, Ratio: 1.12, CI95: [2]float64{1.05, 1.19}, Verdict: stats.Faster}),
			"12% more IOPS than a [5.0%, 19%], faster"},
		{view("wall_s", stats.Comparison{Method: stats.MethodRatio, Ratio: 1.03, CI95: [2]float64{0.98, 1.08}, Verdict: stats.Inconclusive, RoundsNeeded: 40}),
			"3.0% more wall time than a [-2.0%, +8.0%], inconclusive (about 40 rounds would decide)"},
		{view("wall_s", stats.Comparison{Method: stats.MethodRatio, Ratio: 1.001, CI95: [2]float64{0.99, 1.015}, Verdict: stats.Same}),
			"no difference in wall time from a larger than 1.5% ([-1.0%, +1.5%] lies inside ±2.0%), same"},
		{view("wall_s", stats.Comparison{Method: stats.MethodRatio, Ratio: 4.19, CI95: [2]float64{3.615, 4.856}, Verdict: stats.Slower}),
			"4.190x the wall time of a [3.615x, 4.856x], slower"},
		{view("wall_s", stats.Comparison{Method: stats.MethodTooFew, N: 2, Ratio: math.NaN(), Verdict: stats.Inconclusive}),
			"wall time against a: no interval yet (inconclusive (no interval: 3 rounds with both runs are needed))"},
	} {
		if got := answerText(tc.c, 0.02); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

// In Markdown a note under a table is a paragraph of its own, not a row
// GitHub glues to the table.
func TestMarkdownNotesLeaveTheTable(t *testing.T) {
	t.Parallel()
	c := analysis.ComparisonView{Cell: "c", Variant: "b", Baseline: "a", Metric: "wall_s", Primary: true,
		Comparison: stats.Comparison{Method: stats.MethodRatio, Ratio: 1.2, CI95: [2]float64{1.1, 1.3}, Verdict: stats.Slower, Robust: true, Outliers: 1, N: 8}}
	r := &analysis.Report{Baseline: "a", Threshold: 0.02, Comparisons: []analysis.ComparisonView{c},
		Cells: []analysis.CellView{{Name: "c", Variant: "a", Summary: map[string]stats.Summary{"wall_s": {N: 8, Median: 1}}},
			{Name: "c", Variant: "b", Summary: map[string]stats.Summary{"wall_s": {N: 8, Median: 1.2}}}}}
	var buf strings.Builder
	if err := Markdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	for i, l := range lines {
		if strings.Contains(l, "Hodges–Lehmann") && (i == 0 || strings.HasPrefix(lines[i-1], "|") || !strings.HasPrefix(l, "- ")) {
			t.Errorf("a note glued to its table:\n%s\n%s", lines[i-1], l)
		}
	}
	if !strings.Contains(buf.String(), "Hodges–Lehmann") {
		t.Fatalf("no note written:\n%s", buf.String())
	}
}

// Past MaxAnswerCells cells, the answer is one line a variant: its
// verdicts counted over the cells and the range of its ratios.
func TestAnswersOfAManyCellStudy(t *testing.T) {
	t.Parallel()
	r := &analysis.Report{Baseline: "a", Threshold: 0.02}
	for i := range 9 {
		verdict, ratio := stats.Slower, 0.5+0.05*float64(i)
		if i >= 7 {
			verdict, ratio = stats.Same, 1.0
		}
		r.Comparisons = append(r.Comparisons, analysis.ComparisonView{Cell: fmt.Sprintf("c%d", i), Variant: "b", Baseline: "a", Metric: "ops_per_s", Primary: true,
			Comparison: stats.Comparison{Method: stats.MethodRatio, Ratio: ratio, CI95: [2]float64{ratio - 0.01, ratio + 0.01}, Verdict: verdict}})
	}
	as := Answers(r)
	if len(as) != 1 || as[0].Text != "b: slower in 7, same in 2 of 9 cells; IOPS from 0.500x to 1.000x a's (each cell in the table below)" {
		t.Errorf("%+v", as)
	}
}

// A byte rate's axis is ticked at round numbers of MiB/s, labelled so.
func TestByteAxesTickInBinaryUnits(t *testing.T) {
	t.Parallel()
	for _, tk := range (unitTicks{format: metricTicks("bytes_per_s"), ticker: binaryTicks{}}).Ticks(0, 300<<20) {
		if tk.Label == "" {
			continue
		}
		if mib := tk.Value / (1 << 20); mib != math.Round(mib) || !strings.HasSuffix(tk.Label, " MiB/s") && tk.Value != 0 {
			t.Errorf("tick at %.0f B/s (%g MiB/s) labelled %q", tk.Value, mib, tk.Label)
		}
	}
}
