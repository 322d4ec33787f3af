package stats

import "math"

// Trend is Kendall's rank correlation between run order and value.
type Trend struct {
	Tau float64 `json:"tau"`
	// P is the two-sided p-value of "no trend": exact for small samples
	// without ties, from the normal approximation otherwise.
	P float64 `json:"p"`
}

// Kendall tests values (in run order) for a monotonic trend.
func Kendall(values []float64) Trend {
	n := len(values)
	if n < 3 {
		return Trend{P: 1}
	}
	var conc, disc, ties int
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			switch d := values[j] - values[i]; {
			case d > 0:
				conc++
			case d < 0:
				disc++
			default:
				ties++
			}
		}
	}
	pairs := n * (n - 1) / 2
	t := Trend{Tau: float64(conc-disc) / float64(pairs)}
	if ties == 0 && n <= 50 {
		t.P = exactKendallP(n, disc)
		return t
	}
	// Normal approximation (with tau-a's variance; ties make it
	// conservative).
	s := float64(conc - disc)
	sd := math.Sqrt(float64(n*(n-1)*(2*n+5)) / 18)
	z := (math.Abs(s) - 1) / sd // continuity correction
	if z < 0 {
		z = 0
	}
	t.P = math.Min(1, math.Erfc(z/math.Sqrt2))
	return t
}

// exactKendallP is the two-sided p-value of observing a discordant-pair
// count at least as far from its mean as disc, for n untied values: the
// permutations of n with k inversions are counted by the Mahonian numbers.
func exactKendallP(n, disc int) float64 {
	maxInv := n * (n - 1) / 2
	counts := []float64{1}
	for m := 2; m <= n; m++ {
		next := make([]float64, len(counts)+m-1)
		for k, c := range counts {
			for add := 0; add < m; add++ {
				next[k+add] += c
			}
		}
		counts = next
	}
	total := 0.0
	for _, c := range counts {
		total += c
	}
	lo := min(disc, maxInv-disc)
	tail := 0.0
	for k := 0; k <= lo; k++ {
		tail += counts[k]
	}
	return math.Min(1, 2*tail/total)
}

// ModifiedZ is the modified z-score of x among values (Iglewicz and
// Hoaglin): 0.6745 (x - median) / MAD. It is ±Inf when the MAD is zero and x
// differs from the median, and 0 when it equals it.
func ModifiedZ(x float64, values []float64) float64 {
	med, mad := medianMAD(values)
	if mad == 0 {
		switch {
		case x > med:
			return math.Inf(1)
		case x < med:
			return math.Inf(-1)
		}
		return 0
	}
	return 0.6745 * (x - med) / mad
}

// medianMAD is the median of values and their median absolute deviation
// from it.
func medianMAD(values []float64) (med, mad float64) {
	med = median(values)
	dev := make([]float64, len(values))
	for i, v := range values {
		dev[i] = math.Abs(v - med)
	}
	return med, median(dev)
}

// OutlierZ is the modified z-score beyond which a value is an outlier
// (Iglewicz and Hoaglin's recommendation).
const OutlierZ = 3.5
