package stats

import (
	"fmt"
	"math"
)

// Warning is a reason a number may not mean what it seems: a stable code
// for programs and a plain sentence for people. Warnings travel beside
// results as values; they are never failures.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Warning codes raised from the values of a metric.
const (
	CodeHighCV          = "high-cv"
	CodeFirstRunOutlier = "first-run-outlier"
	CodeTrend           = "trend"
	CodeTooFewRuns      = "too-few-runs"
	HighCVThreshold     = 0.10
	trendAlpha          = 0.05
)

// Diagnose looks at one metric's values over the measured runs of a cell,
// in run order, and says what makes them noisy. label names the metric in
// the sentences ("randread-4k ops/s"), format its values in its unit (nil:
// FormatValue); trendAdvice is what a drift over the runs means for the
// experiment's comparisons, said after it.
func Diagnose(label string, values []float64, format func(float64) string, trendAdvice string) []Warning {
	if format == nil {
		format = FormatValue
	}
	var ws []Warning
	n := len(values)
	if n == 0 {
		return nil
	}
	if n < MinRunsForCI {
		ws = append(ws, Warning{CodeTooFewRuns, fmt.Sprintf(
			"%s: %d runs are too few for a 95%% confidence interval of the median; use --rounds %d or more", label, n, MinRunsForCI)})
	}
	s := Summarize(values)
	if s.CV > HighCVThreshold {
		ws = append(ws, Warning{CodeHighCV, fmt.Sprintf(
			"%s varies by %.0f%% (coefficient of variation) across %d runs; differences smaller than about %.0f%% cannot be told from noise",
			label, 100*s.CV, n, 100*MinDetectable(s.CV, n))})
	}
	if n >= 3 {
		if z := ModifiedZ(values[0], values); math.Abs(z) > OutlierZ {
			ws = append(ws, Warning{CodeFirstRunOutlier, fmt.Sprintf(
				"%s: the first measured run (%s) is unlike the rest (median %s, modified z-score %.1f); the target was probably not warmed up; add --warmup runs",
				label, format(values[0]), format(s.Median), z)})
		}
	}
	if t := Kendall(values); n >= 4 && t.P < trendAlpha {
		first, last := values[0], values[n-1]
		dir := "rose"
		if last < first {
			dir = "fell"
		}
		ws = append(ws, Warning{CodeTrend, fmt.Sprintf(
			"%s %s steadily over the runs, from %s to %s (Kendall tau %.2f, p=%.3f): the target drifted during the experiment (throttling, cache filling, a disk slowing down); %s",
			label, dir, format(first), format(last), t.Tau, t.P, trendAdvice)})
	}
	return ws
}

// MinDetectable is the smallest relative difference between two variants of
// n runs each with coefficient of variation cv that a two-sided test at 5%
// detects with 80% power: (1.96 + 0.84) x cv x sqrt(2/n).
func MinDetectable(cv float64, n int) float64 {
	if n == 0 {
		return math.Inf(1)
	}
	return 2.8 * cv * math.Sqrt(2/float64(n))
}

// FormatValue prints a value with 3 significant digits and an SI suffix.
func FormatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e12:
		return fmt.Sprintf("%.3gT", v/1e12)
	case a >= 1e9:
		return fmt.Sprintf("%.3gG", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}

// CodeVariantWarmup marks a variant still warming up when the rounds
// ended (CheckWarmup found it Unsettled): its verdicts are withheld.
const CodeVariantWarmup = "variant-warmup"

// EarlyRuns (a cell's own series; a start every variant of a cell shares
// is the machine's) counts the leading values of a series, in run order, that lie
// on one side of the rest and far from it — each an outlier (modified
// z-score beyond OutlierZ) against the values after the leading ones — up
// to a third of the series; 0 when the first is not one.
func EarlyRuns(values []float64) int {
	n := len(values)
	if n < 6 {
		return 0
	}
	k := 0
	for k < n/3 {
		rest := values[k+1:]
		z := ModifiedZ(values[k], rest)
		if math.Abs(z) <= OutlierZ || (k > 0 && (z > 0) != (ModifiedZ(values[0], rest) > 0)) {
			break
		}
		k++
	}
	return k
}
