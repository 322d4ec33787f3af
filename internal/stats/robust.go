package stats

import (
	"math"
	"sort"
)

// minRobust is the fewest pairs a robust estimate is made from: with
// fewer, the signed-rank interval cannot reach 95%. maxRobust bounds the
// pairs (its n²/2 pairwise means): past it, one round among thousands
// cannot move the mean far.
const (
	minRobust = 6
	maxRobust = 3000
)

// outlierRounds counts the per-round estimates far from the others
// (modified z-score beyond OutlierZ).
func outlierRounds(d []float64) int {
	n := 0
	for _, x := range d {
		if math.Abs(ModifiedZ(x, d)) > OutlierZ {
			n++
		}
	}
	return n
}

// robust estimates the per-round differences d by Hodges–Lehmann — the
// median of the pairwise means (d_i + d_j)/2, i <= j — with the
// distribution-free interval of Wilcoxon's signed-rank statistic (the
// k-th smallest and largest pairwise means), and P from the signed-rank
// test. One round far from the rest moves it little, where it can move
// the mean past zero.
func (c *Comparison) robust(d []float64) {
	n := len(d)
	walsh := make([]float64, 0, n*(n+1)/2)
	for i := range d {
		for j := i; j < n; j++ {
			walsh = append(walsh, (d[i]+d[j])/2)
		}
	}
	sort.Float64s(walsh)
	k := signedRankCritical(n, (1-Confidence)/2) // pairwise means cut from each end
	c.est = median(walsh)
	c.ci = [2]float64{walsh[k], walsh[len(walsh)-1-k]}
	c.df = float64(n - 1)
	// The standard error the interval implies, for the MDE and the rounds
	// needed, which plan with a t interval.
	c.se = (c.ci[1] - c.ci[0]) / (2 * tDist(c.df).Quantile(1-(1-Confidence)/2))
	c.P = signedRankP(d)
	c.Robust, c.SlotFitted, c.slot = true, false, 0
}

// signedRankCritical is how many pairwise means lie outside the two-sided
// interval: the largest k with P(T <= k-1) <= alpha for Wilcoxon's T on n
// pairs (exact counts up to 60 pairs, the normal approximation beyond).
func signedRankCritical(n int, alpha float64) int {
	if n > 60 {
		m := float64(n*(n+1)) / 4
		sd := math.Sqrt(float64(n*(n+1)*(2*n+1)) / 24)
		z := -math.Sqrt2 * math.Erfcinv(2*(1-alpha))
		return max(0, int(math.Floor(m-z*sd-0.5)))
	}
	counts := signedRankCounts(n)
	total := math.Ldexp(1, n)
	cum, k := 0.0, 0
	for t := range counts {
		if cum += counts[t]; cum/total > alpha {
			break
		}
		k = t + 1
	}
	return k
}

// signedRankCounts[t] is the number of subsets of {1..n} summing to t.
func signedRankCounts(n int) []float64 {
	counts := make([]float64, n*(n+1)/2+1)
	counts[0] = 1
	for r := 1; r <= n; r++ {
		for t := len(counts) - 1; t >= r; t-- {
			counts[t] += counts[t-r]
		}
	}
	return counts
}

// signedRankP is the two-sided p-value of Wilcoxon's signed-rank test of
// d about zero: zeros left out, ties given their mean rank; exact without
// ties up to 60 values, else the normal approximation with a continuity
// correction.
func signedRankP(d []float64) float64 {
	var nz []float64
	for _, x := range d {
		if x != 0 {
			nz = append(nz, x)
		}
	}
	n := len(nz)
	if n == 0 {
		return 1
	}
	sort.Slice(nz, func(i, j int) bool { return math.Abs(nz[i]) < math.Abs(nz[j]) })
	var plus float64
	ties := false
	for i := 0; i < n; {
		j := i
		for j+1 < n && math.Abs(nz[j+1]) == math.Abs(nz[i]) {
			j++
		}
		ties = ties || j > i
		rank := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			if nz[k] > 0 {
				plus += rank
			}
		}
		i = j + 1
	}
	m := float64(n*(n+1)) / 4
	if !ties && n <= 60 {
		counts := signedRankCounts(n)
		lo := int(math.Min(plus, 2*m-plus))
		tail := 0.0
		for t := 0; t <= lo; t++ {
			tail += counts[t]
		}
		return math.Min(1, 2*tail/math.Ldexp(1, n))
	}
	sd := math.Sqrt(float64(n*(n+1)*(2*n+1)) / 24)
	z := math.Max(0, math.Abs(plus-m)-0.5) / sd
	return math.Min(1, math.Erfc(z/math.Sqrt2))
}
