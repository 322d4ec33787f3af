package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/units"
)

// An Answer is what a report says first, of one cell's primary metric and
// one variant against the baseline: in words and numbers, what changed,
// by how much, how sure, and whether that is better — as hyperfine's
// "ran 1.12 ± 0.05 times faster than" and Criterion's "No change in
// performance detected" do.
type Answer struct {
	Cell, Variant, Verdict string
	// Text is the sentence, under the cell's name when the report has
	// several: "randread qd=4 — b: 13% less wall time than a [5.0%, 20%], faster".
	Text string
}

// Answers are the report's answers: every primary comparison, in the
// report's order — or, past MaxAnswerCells cells, one per variant that
// counts its verdicts over the cells and gives the range of its ratios
// (each cell's is in the verdict table), so the answer still fits the
// first screen of a 36-cell study.
func Answers(r *analysis.Report) []Answer {
	var out []Answer
	cells := map[string]bool{}
	for _, c := range r.Comparisons {
		if c.Primary {
			cells[c.Cell] = true
			out = append(out, Answer{Cell: c.Cell, Variant: c.Variant, Verdict: c.Verdict, Text: c.Variant + ": " + answerText(c, r.Threshold)})
		}
	}
	if len(cells) > MaxAnswerCells {
		return variantAnswers(r)
	}
	if len(cells) > 1 {
		for i := range out {
			out[i].Text = out[i].Cell + " — " + out[i].Text
		}
	}
	return out
}

// MaxAnswerCells is the most cells whose answers are given one by one.
const MaxAnswerCells = 6

// variantAnswers sum each variant's primary comparisons over the cells.
func variantAnswers(r *analysis.Report) []Answer {
	type tally struct {
		n        int
		verdicts map[string]int
		lo, hi   float64
		metric   string
	}
	var order []string
	by := map[string]*tally{}
	for _, c := range r.Comparisons {
		if !c.Primary {
			continue
		}
		t := by[c.Variant]
		if t == nil {
			t = &tally{verdicts: map[string]int{}, lo: math.Inf(1), hi: math.Inf(-1), metric: c.Metric}
			by[c.Variant] = t
			order = append(order, c.Variant)
		}
		t.n++
		t.verdicts[c.Verdict]++
		if c.Metric != t.metric {
			t.metric = ""
		}
		if !c.IsDifference() && c.Method != stats.MethodNone && c.Method != stats.MethodTooFew && !math.IsNaN(c.Ratio) {
			t.lo, t.hi = math.Min(t.lo, c.Ratio), math.Max(t.hi, c.Ratio)
		}
	}
	var out []Answer
	for _, v := range order {
		t := by[v]
		var parts []string
		verdict := stats.Inconclusive
		for _, name := range []string{stats.Slower, stats.Faster, stats.Same, stats.Inconclusive, stats.Failed} {
			if k := t.verdicts[name]; k > 0 {
				parts = append(parts, fmt.Sprintf("%s in %d", name, k))
				if k == t.n {
					verdict = name
				}
			}
		}
		text := fmt.Sprintf("%s: %s of %d cells", v, strings.Join(parts, ", "), t.n)
		if noun, _ := metricNoun(t.metric); t.metric != "" && t.lo <= t.hi {
			text += fmt.Sprintf("; %s from %sx to %sx %s's (each cell in the table below)", noun, RatioText(t.lo), RatioText(t.hi), r.Baseline)
		}
		out = append(out, Answer{Variant: v, Verdict: verdict, Text: text})
	}
	return out
}

// answerText says a comparison in a sentence.
func answerText(c analysis.ComparisonView, threshold float64) string {
	noun, format := metricNoun(c.Metric)
	switch {
	case c.Failed != "":
		return "not compared: " + c.Failed
	case c.Method == stats.MethodNone, c.Method == stats.MethodTooFew:
		return fmt.Sprintf("%s against %s: no interval yet (%s)", noun, c.Baseline, verdictText(c.Comparison))
	case c.Withheld != "":
		// No estimate as the answer: what withheld it (drift between
		// stretches, a warm-up) is in it.
		return fmt.Sprintf("%s against %s: no answer, %s; the estimate is in the table below, unjudged", noun, c.Baseline, verdictText(c.Comparison))
	case c.Method == stats.MethodDifference, c.Method == stats.MethodUnpairedDifference:
		return fmt.Sprintf("%s %s against %s [%s, %s], %s", noun, signed(c.Diff, format), c.Baseline,
			signed(c.DiffCI[0], format), signed(c.DiffCI[1], format), verdictText(c.Comparison))
	}
	lo, hi := c.CI95[0], c.CI95[1]
	if c.Verdict == stats.Same {
		far := math.Max(math.Abs(lo-1), math.Abs(hi-1))
		return fmt.Sprintf("no difference in %s from %s larger than %s ([%s, %s] lies inside ±%s), same",
			noun, c.Baseline, pct(far), signedPct(lo-1), signedPct(hi-1), pct(threshold))
	}
	if c.Ratio >= 2 || c.Ratio <= 0.5 {
		return fmt.Sprintf("%sx the %s of %s [%sx, %sx], %s", RatioText(c.Ratio), noun, c.Baseline, RatioText(lo), RatioText(hi), verdictText(c.Comparison))
	}
	more := c.Ratio >= 1
	word := map[bool]string{true: "more", false: "less"}[more]
	interval := fmt.Sprintf("[%s, %s]", pct(math.Abs(lo-1)), pct(math.Abs(hi-1)))
	if !more {
		interval = fmt.Sprintf("[%s, %s]", pct(1-hi), pct(1-lo))
	}
	if (lo-1)*(hi-1) < 0 { // the interval holds both directions
		interval = fmt.Sprintf("[%s, %s]", signedPct(lo-1), signedPct(hi-1))
	}
	return fmt.Sprintf("%s %s %s than %s %s, %s", pct(math.Abs(c.Ratio-1)), word, noun, c.Baseline, interval, verdictText(c.Comparison))
}

// metricNoun is how a sentence names a metric, and its format.
func metricNoun(metric string) (string, func(float64) string) {
	if d, ok := metrics.Describe(metric); ok {
		return d.Noun(), d.Format
	}
	return metric, plain
}

// pct prints a fraction as a percentage, with a decimal below 10%.
func pct(f float64) string {
	if f < 0.1 {
		return fmt.Sprintf("%.1f%%", 100*f)
	}
	if f > 10 {
		return ">1000%"
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

func signedPct(f float64) string {
	if f < 0 {
		return "-" + pct(-f)
	}
	return "+" + pct(f)
}

// writeAnswers writes the answers first, a line each (a list item in
// Markdown).
func writeAnswers(w io.Writer, r *analysis.Report, markdown bool) {
	as := Answers(r)
	if len(as) == 0 {
		return
	}
	if markdown {
		fmt.Fprintf(w, "\n**The answer** (%s):\n\n", answerScope(r))
	} else {
		fmt.Fprintf(w, "\nthe answer (%s):\n", answerScope(r))
	}
	for _, a := range as {
		text := a.Text
		if r.Colour && !markdown {
			text = colour(a.Verdict, text)
		}
		fmt.Fprintf(w, map[bool]string{false: "  %s\n", true: "- %s\n"}[markdown], text)
	}
}

// compared is what a report's comparisons compare: variants, or the
// values of the matrix field they are along.
func compared(r *analysis.Report) string {
	if r.Along != "" {
		return r.Along
	}
	return "variant"
}

// answerScope says what the answers compare: the metric and which way is
// better, and the baseline.
func answerScope(r *analysis.Report) string {
	what := "each cell's primary metric"
	if d, ok := metrics.Describe(primaryOf(r)); ok {
		what = d.Noun() + map[bool]string{true: ", lower is better", false: ", higher is better"}[d.Better == metrics.LowerIsBetter]
	}
	return fmt.Sprintf("%s; each %s against %s", what, compared(r), r.Baseline)
}

// answerOf is the line above the answers in HTML.
func answerOf(r *analysis.Report) string { return "The answer (" + answerScope(r) + "):" }

// primaryOf is the metric of the report's primary comparisons when they
// share one, else "".
func primaryOf(r *analysis.Report) string {
	m := ""
	for _, c := range r.Comparisons {
		if !c.Primary {
			continue
		}
		if m != "" && m != c.Metric {
			return ""
		}
		m = c.Metric
	}
	return m
}

// writeCommits names the commit each git variant was built from.
func writeCommits(w io.Writer, r *analysis.Report, markdown bool) {
	if len(r.Commits) == 0 {
		return
	}
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(r.Commits)) {
		c := r.Commits[v]
		if markdown {
			parts = append(parts, fmt.Sprintf("%s `%s`", v, shortCommit(c)))
		} else {
			parts = append(parts, v+" "+shortCommit(c))
		}
	}
	fmt.Fprintf(w, "built from: %s\n", strings.Join(parts, ", "))
}

// shortCommit is a commit as git log --abbrev=12 shows it.
func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// writeVerified says what the runs that read back what they wrote found,
// and what each later check of it found.
func writeVerified(w io.Writer, r *analysis.Report, markdown bool) {
	if len(r.Verified) == 0 {
		return
	}
	fmt.Fprint(w, map[bool]string{false: "\nread back:\n", true: "\n### Read back\n\n"}[markdown])
	for _, v := range r.Verified {
		name := v.Cell
		if v.Variant != "" {
			name = v.Variant + "/" + v.Cell
		}
		if markdown {
			fmt.Fprintf(w, "- %s: %s\n", name, verifiedSays(v))
		} else {
			fmt.Fprintf(w, "  %s: %s\n", name, verifiedSays(v))
		}
	}
}

// verifiedSays is what one read-back check found, in words.
func verifiedSays(v analysis.VerifiedCell) string {
	where := "in " + units.Plural(v.Runs, "run")
	if v.At != nil {
		where = fmt.Sprintf("by %s at %s, from %s", v.By, v.At.UTC().Format("2006-01-02 15:04:05 UTC"), v.Target)
		if v.Interrupted {
			where += " (interrupted: the objects it reached)"
		}
	}
	if v.OK() {
		return fmt.Sprintf("%s checked %s, every one as written", units.Plural(int(v.Checked), "object"), where)
	}
	says := fmt.Sprintf("FAILED: of %s checked %s, %d differ from what was written, %d are missing and %d could not be read",
		units.Plural(int(v.Checked), "object"), where, v.Mismatched, v.Missing, v.Unreadable)
	if len(v.First) > 0 {
		says += "; first: " + strings.Join(v.First, ", ")
	}
	return says
}
