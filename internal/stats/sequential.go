package stats

import (
	"math"
	"slices"
)

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
// at few rounds by the t quantile's excess over the normal's at the
// boundary's own tail (without it, 5.3% false verdicts in A/A under drift
// at threshold 0; checked by TestSequentialStopsWhenDecided and
// TestSequentialFamilyKeepsItsShare):
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
	family    int
	alpha     float64
	r         float64
}

// NewSequential prepares the judgement of family comparisons, each
// looked at from fewest to most rounds.
func NewSequential(threshold float64, fewest, most, family int) Sequential {
	family = max(family, 1)
	s := Sequential{Threshold: threshold, Min: fewest, Max: most, family: family, alpha: (1 - Confidence) / float64(family)}
	nOpt := math.Sqrt(float64(fewest) * float64(most))
	// The r that makes the boundary narrowest at nOpt, by golden-section
	// search over log r.
	width := func(logR float64) float64 { return s.halfWidth(nOpt, 1, math.Exp(logR)) }
	s.r = math.Exp(GoldenMin(width, math.Log(1e-3), math.Log(1e4), 100))
	return s
}

// GoldenMin is where f, unimodal on [lo, hi], is least: golden-section
// search, iters steps (each narrows the bracket to 0.618 of itself).
func GoldenMin(f func(float64) float64, lo, hi float64, iters int) float64 {
	g := (math.Sqrt(5) - 1) / 2
	for range iters {
		a, b := hi-g*(hi-lo), lo+g*(hi-lo)
		if f(a) < f(b) {
			hi = b
		} else {
			lo = a
		}
	}
	return (lo + hi) / 2
}

// halfWidth is the sequence's half width at n rounds of standard
// deviation sd, for mixture spread r.
func (s Sequential) halfWidth(n, sd, r float64) float64 {
	return sd * math.Sqrt((n+r)*math.Log((n+r)/(r*s.alpha*s.alpha))) / n
}

// winsorFrom and WinsorZ: see winsorize.
const (
	winsorFrom = 12
	WinsorZ    = 5
)

// MethodSequential: the mean of per-round log ratios, judged by an
// always-valid confidence sequence (Sequential).
const MethodSequential = "sequential"

// Compare judges the rounds so far of a metric: pairs of runs by round,
// values not finite or not positive left out (a zero cannot be a ratio:
// a Zeroable metric is not judged sequentially). CI95 is the sequence's
// interval, which holds at every look; P is not defined. The MDE is the
// effect whose estimate clears the sequence's bound with probability
// Power at these rounds, RoundsNeeded the rounds at which the estimate
// would (both a normal approximation, not averaged over σ's uncertainty
// as the fixed-rounds figures are).
func (s Sequential) Compare(base, variant []Obs, m Metric) Comparison {
	c := Comparison{LowerIsBetter: m.LowerIsBetter, Family: s.family, Method: MethodSequential,
		P: math.NaN(), PAdjusted: math.NaN(), Diff: math.NaN(), DiffCI: [2]float64{math.NaN(), math.NaN()},
		SlotEffect: math.NaN(), Verdict: Inconclusive}
	var d []float64
	for _, p := range logRatios(base, variant) {
		d = append(d, p.d)
	}
	c.N = len(d)
	if c.N < max(MinPairs, s.Min) {
		c.tooFew(base, variant)
		c.Method, c.Family, c.RoundsNeeded = MethodSequential, s.family, max(MinPairs, s.Min)
		return c
	}
	// A run far off (a stall, a neighbour's backup) would widen the
	// sequence for every look after it: from winsorFrom rounds on, each
	// round's ratio is held within WinsorZ robust standard deviations of
	// their median (winsorized), symmetric about it, so the mean of
	// what is held still estimates a difference the way most rounds show
	// it.
	mu, sd, h, moved := s.interval(d)
	c.Outliers = moved
	n := float64(c.N)
	c.est, c.se, c.df, c.band = mu, sd/math.Sqrt(n), n-1, math.Log1p(s.Threshold)
	c.Ratio, c.CI95 = math.Exp(mu), [2]float64{math.Exp(mu - h), math.Exp(mu + h)}
	c.PairMedian = math.Exp(median(d))
	better := func(higher bool) string {
		if higher != m.LowerIsBetter {
			return Faster
		}
		return Slower
	}
	switch {
	case mu-h > c.band:
		c.Verdict = better(true)
	case mu+h < -c.band:
		c.Verdict = better(false)
	case mu-h >= -c.band && mu+h <= c.band:
		c.Verdict = Same
	}
	// The effect the estimate clears the bound for with probability Power.
	zPower := -math.Sqrt2 * math.Erfcinv(2*Power)
	need := func(k float64) float64 { return c.band + s.halfWidth(k, sd, s.r) + zPower*sd/math.Sqrt(k) }
	c.MDE = math.Expm1(need(n))
	if c.Verdict == Inconclusive {
		c.RoundsNeeded = -1
		for k := c.N + 1; k <= maxRoundsFactor*c.N; k++ {
			if need(float64(k)) <= math.Abs(mu) {
				c.RoundsNeeded = k
				break
			}
		}
	}
	return c
}

// Interval is the sequence's estimate of the mean of d (2 or more
// values, say per-round log ratios) with its always-valid interval.
func (s Sequential) Interval(d []float64) (mean, lo, hi float64) {
	mu, _, h, _ := s.interval(slices.Clone(d))
	return mu, mu - h, mu + h
}

// interval is the sequence's estimate of the mean of d and its half
// width at len(d) values (2 or more), with the standard deviation it
// rests on; d is winsorized in place first, moved of its values.
func (s Sequential) interval(d []float64) (mu, sd, h float64, moved int) {
	moved = winsorize(d)
	mu = mean(d)
	var ss float64
	for _, x := range d {
		ss += (x - mu) * (x - mu)
	}
	n := float64(len(d))
	sd = math.Sqrt(ss/(n-1)) * s.studentize(n)
	return mu, sd, s.halfWidth(n, sd, s.r), moved
}

// studentize is what the estimated standard deviation is widened by at
// n values: the boundary at n, read as a normal quantile, is replaced by
// the t quantile (n-1 degrees of freedom) of the same tail. At a few
// rounds the estimate is often too small, and the more so the further
// out the boundary lies (a family's share of the 5%, the mixture's
// width). Widened instead by the t quantile's excess at 97.5% whatever
// the boundary (as before), A/A sequences looked at every round erred
// 1.3x their share in a family of 3, 2x in one of 6 and 4.3x in a
// bisect step's (18, to 150 rounds); so they err 0.4–1.0x of it, at
// about a fifth more rounds to decide where the share is the whole 5%.
func (s Sequential) studentize(n float64) float64 {
	z := s.halfWidth(n, 1, s.r) * math.Sqrt(n)
	t := -tQuantile(n-1, math.Erfc(z/math.Sqrt2)/2)
	if !(t >= z) || math.IsInf(t, 0) { // a tail beyond what floats hold
		return 1
	}
	return t / z
}

// winsorize holds each of d within WinsorZ robust standard deviations
// (MAD/0.6745) of d's median, from winsorFrom values on, and returns how
// many it moved. Both are wider than the fixed-rounds outlier rule's: a
// sequence is looked at from few rounds on, where a MAD is often small
// by chance, and a normal round held in shrinks the standard deviation
// the sequence's width rests on (at 6 rounds and 3.5 MADs, A/A false
// verdicts at CV 20% rose from 5.2% to 7.6%).
func winsorize(d []float64) int {
	if len(d) < winsorFrom {
		return 0
	}
	med, mad := medianMAD(d)
	bound := WinsorZ * mad / 0.6745
	if bound == 0 {
		return 0
	}
	moved := 0
	for i, x := range d {
		if c := math.Max(med-bound, math.Min(med+bound, x)); c != x {
			d[i], moved = c, moved+1
		}
	}
	return moved
}
