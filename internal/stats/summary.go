package stats

import (
	"math"
	"sort"

	"golang.org/x/perf/benchmath"
)

// Confidence is the level of every interval iolab reports.
const Confidence = 0.95

// Summary describes one metric over the measured runs of a cell.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	// CI95 is the 95% confidence interval of the median, or nil when the
	// runs are too few for one (fewer than 6).
	CI95 *[2]float64 `json:"ci95"`
	Mean float64     `json:"mean"`
	SD   float64     `json:"sd"`
	// CV is SD/Mean (0.1 = 10%).
	CV  float64 `json:"cv"`
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// MinRunsForCI is the fewest runs whose order statistics give a 95%
// interval for the median: with 5, the widest interval [min, max] covers
// the median with only 1 - 2/2^5 = 93.75% confidence.
const MinRunsForCI = 6

// Summarize computes the summary of values; it does not modify them.
func Summarize(values []float64) Summary {
	n := len(values)
	if n == 0 {
		return Summary{}
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	s := Summary{N: n, Min: sorted[0], Max: sorted[n-1]}
	sample := benchmath.NewSample(sorted, &benchmath.DefaultThresholds)
	sum := benchmath.AssumeNothing.Summary(sample, Confidence)
	s.Median = sum.Center
	if !math.IsInf(sum.Lo, 0) && !math.IsInf(sum.Hi, 0) {
		s.CI95 = &[2]float64{sum.Lo, sum.Hi}
	}
	for _, v := range values {
		s.Mean += v
	}
	s.Mean /= float64(n)
	if n > 1 {
		var ss float64
		for _, v := range values {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(n-1))
	}
	if s.Mean != 0 {
		s.CV = s.SD / math.Abs(s.Mean)
	}
	return s
}

// median of a sorted copy of values.
func median(values []float64) float64 {
	s := append([]float64(nil), values...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
