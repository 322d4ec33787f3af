package stats

import "math"

// Sequential judges a comparison that is looked at after every round and
// stopped as soon as it is decided. A fixed-rounds interval looked at
// round after round says "faster" in an A/A far more often than its 5%
// (each look is another chance); Sequential uses an always-valid
// confidence sequence instead — intervals that hold simultaneously at
// every look, so stopping on any of them keeps the error rate.
//
// The sequence is Robbins' normal mixture (Howard, Ramdas, McAuliffe and
// Sekhon 2021, "Time-uniform, nonparametric, nonasymptotic confidence
// sequences", the two-sided normal-mixture boundary) for the mean of the
// per-round log ratios, with the standard deviation estimated from the
// rounds so far (the plug-in form, valid as rounds accumulate), widened
// at few rounds by the t quantile's excess over the normal's (without it,
// 5.3% false verdicts in A/A under drift at threshold 0; checked by
// TestSequentialStopsWhenDecided):
//
//	|mean - μ| <= σ̂ · sqrt((n + r) · log((n + r) / (r · α²))) / n
//
// r, the mixture's spread in units of σ², is fixed before the first look,
// tuned to be tightest halfway (geometrically) between the fewest and the
// most rounds the plan allows. A family of m comparisons splits α
// (Bonferroni): Holm does not carry over to looks.
type Sequential struct {
	Threshold float64
	Min, Max  int
	alpha     float64
	r         float64
}

// NewSequential prepares the judgement of family comparisons, each
// looked at from min to max rounds.
func NewSequential(threshold float64, min, max, family int) Sequential {
	s := Sequential{Threshold: threshold, Min: min, Max: max, alpha: (1 - Confidence) / float64(family)}
	nOpt := math.Sqrt(float64(min) * float64(max))
	// The r that makes the boundary narrowest at nOpt, by golden-section
	// search over log r.
	width := func(logR float64) float64 { return s.halfWidth(nOpt, 1, math.Exp(logR)) }
	lo, hi := math.Log(1e-3), math.Log(1e4)
	g := (math.Sqrt(5) - 1) / 2
	for range 100 {
		a, b := hi-g*(hi-lo), lo+g*(hi-lo)
		if width(a) < width(b) {
			hi = b
		} else {
			lo = a
		}
	}
	s.r = math.Exp((lo + hi) / 2)
	return s
}

// halfWidth is the sequence's half width at n rounds of standard
// deviation sd, for mixture spread r.
func (s Sequential) halfWidth(n, sd, r float64) float64 {
	return sd * math.Sqrt((n+r)*math.Log((n+r)/(r*s.alpha*s.alpha))) / n
}

// Look is what the rounds so far say.
type Look struct {
	N       int
	Ratio   float64    // exp of the mean per-round log ratio
	CS      [2]float64 // the always-valid interval of the ratio
	Verdict string     // Inconclusive until decided (or the rounds are spent)
}

// Look judges the rounds so far of a metric where higher or lower is
// better; pairs of runs by round, values not finite or not positive left
// out (a zero cannot be a ratio: such metrics are not judged
// sequentially).
func (s Sequential) Look(base, variant []Obs, lowerIsBetter bool) Look {
	byRound := map[int]float64{}
	for _, o := range base {
		if finite(o.Value) && o.Value > 0 {
			byRound[o.Round] = o.Value
		}
	}
	var d []float64
	for _, o := range variant {
		if b, ok := byRound[o.Round]; ok && finite(o.Value) && o.Value > 0 {
			d = append(d, math.Log(o.Value/b))
		}
	}
	l := Look{N: len(d), Verdict: Inconclusive, Ratio: math.NaN(), CS: [2]float64{math.NaN(), math.NaN()}}
	if l.N < max(2, s.Min) {
		return l
	}
	m := mean(d)
	var ss float64
	for _, x := range d {
		ss += (x - m) * (x - m)
	}
	// The standard deviation is estimated: at a few rounds it is often
	// too small, so it is widened by the t quantile's excess over the
	// normal's, which fades as rounds accumulate.
	sd := math.Sqrt(ss/float64(l.N-1)) * tDist(float64(l.N-1)).Quantile(0.975) / 1.959963984540054
	h := s.halfWidth(float64(l.N), sd, s.r)
	l.Ratio, l.CS = math.Exp(m), [2]float64{math.Exp(m - h), math.Exp(m + h)}
	band := math.Log1p(s.Threshold)
	better := func(higher bool) string {
		if higher != lowerIsBetter {
			return Faster
		}
		return Slower
	}
	switch {
	case m-h > band:
		l.Verdict = better(true)
	case m+h < -band:
		l.Verdict = better(false)
	case m-h >= -band && m+h <= band:
		l.Verdict = Same
	}
	return l
}
