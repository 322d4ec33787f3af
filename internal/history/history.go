// Package history lines up one metric of one cell across experiments in
// time order, says what changed between neighbours, and finds where the
// series changed level.
//
// Change points are found by binary segmentation, each split kept only
// while a permutation test says it is beyond chance: first the split of
// largest standardized CUSUM (the difference of the means either side,
// in standard errors), most powerful for a step; failing that, e-divisive
// means (Matteson and James, "A Nonparametric Approach for Multiple
// Change Point Analysis of Multivariate Data", JASA 109(505), 2014): the
// split that maximizes the energy distance between the points before and
// after it, with its right edge searched, which finds a level that came
// and went. The two share each split's 5% (4% and 1%). E-divisive means
// is the method MongoDB runs over its CI performance history (Daly et
// al., "The Use of Change Point Detection to Identify Software
// Performance Regressions in a Continuous Integration System", ICPE 2020) and the one Apache Otava (formerly Hunter; Fleming et al.,
// ICPE 2023) starts from. Otava replaced the permutation test by a
// Student's t-test between neighbouring segments for speed; histories of
// experiments are short, so the permutation test, which assumes nothing
// about the noise's shape, stays.
//
// The unit is the experiment: each point is the median of one
// experiment's runs, so the test weighs the differences between days
// (the machine, the target's state) that runs of one experiment share
// and no number of runs within it can average away. The price: a history
// needs MinPoints experiments before any change can be significant, and
// a change shows once enough experiments after it agree.
//
// This package imports nothing above stats.
package history

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/units"
	"gonum.org/v1/gonum/stat"
)

// Point is one experiment's measurements of the series.
type Point struct {
	Experiment string
	At         time.Time
	// Values are the metric over the experiment's measured runs.
	Values []float64
	Notes  []string
	// Facts are what may explain a change (kernel, cpu, disk, iolab
	// version, the variant's commit), compared between neighbours.
	Facts map[string]string
}

// Change is a fact that differs from the previous experiment.
type Change struct {
	Fact string `json:"fact"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Step is one experiment of a history.
type Step struct {
	Experiment string        `json:"experiment"`
	At         time.Time     `json:"at"`
	Summary    stats.Summary `json:"summary"`
	Notes      []string      `json:"notes,omitempty"`
	Changes    []Change      `json:"changes,omitempty"`
	// Previous is this experiment against the one before, unpaired over
	// their runs (nil for the first, or when either has fewer than 2
	// runs): it covers the runs' noise only, not what differs between
	// days, which the change points weigh.
	Previous *stats.Comparison `json:"vs_previous,omitempty"`
}

// ChangePoint is where the series changed level: from the experiment at
// Index on, the points sit elsewhere than before.
type ChangePoint struct {
	Index      int    `json:"index"`
	Experiment string `json:"experiment"`
	// Before and After are the medians of the experiments' medians in
	// the segments either side; Ratio is After/Before, or with
	// Difference set After-Before (a metric that can be zero).
	Before     float64 `json:"before"`
	After      float64 `json:"after"`
	Ratio      float64 `json:"ratio"`
	Difference bool    `json:"difference,omitempty"`
	// Direction is "regression", "improvement", or "none" when the
	// change is within the threshold.
	Direction string `json:"direction"`
	// P is the permutation test's p-value for this split, given the
	// change points found before it.
	P float64 `json:"p"`
	// Located is where the change may be, 95%: the first experiment of
	// the new level lies in steps [Located[0], Located[1]] (Locate).
	Located [2]int `json:"located"`
}

// Analysis is one series' history.
type Analysis struct {
	Steps        []Step        `json:"steps"`
	ChangePoints []ChangePoint `json:"change_points"`
	Method       string        `json:"method"`
	// Reason says why no change point could be found, when none could.
	Reason string `json:"reason,omitempty"`
}

// Method names the change point method in reports.
var Method = fmt.Sprintf("CUSUM, then e-divisive means (Matteson & James 2014), by binary segmentation; permutation tests, p < %.2g and p < %.2g",
	Alpha*cusumShare, Alpha*(1-cusumShare))

// MinPoints is the fewest experiments in which a change point can be
// significant: a permutation test cannot tell the k points after a clean
// change from any k of n points that happen to be the highest until
// 2/C(n, k) is below Alpha — for n = 7 it is at best 2/35 = 0.057.
const MinPoints = 8

// Alpha is the significance level of each change point.
const Alpha = 0.05

// permutations is the number of random permutations per test when there
// are more than exactPermutations in all: p is then known to about ±0.007
// at 0.05; with fewer, every one is tried and p is exact, so a history
// of up to 8 experiments gets the same answer whatever the seed.
const (
	permutations      = 999
	exactPermutations = 40320
)

// Analyze builds the history of points (oldest first) of metric m;
// threshold is the practical difference, as in comparisons.
func Analyze(points []Point, m stats.Metric, threshold float64) Analysis {
	a := Analysis{Method: Method, Steps: []Step{}, ChangePoints: []ChangePoint{}}
	var cs []*stats.Comparison
	for i, p := range points {
		s := Step{Experiment: p.Experiment, At: p.At, Summary: stats.Summarize(p.Values), Notes: p.Notes}
		if i > 0 {
			s.Changes = changes(points[i-1].Facts, p.Facts)
			if len(points[i-1].Values) >= 2 && len(p.Values) >= 2 {
				c := stats.CompareUnpaired(points[i-1].Values, p.Values, m, threshold)
				s.Previous = &c
				cs = append(cs, s.Previous)
			}
		}
		a.Steps = append(a.Steps, s)
	}
	stats.Finish(cs, threshold)
	useLog := !m.Zeroable
	x := make([]float64, len(points))
	for i, s := range a.Steps {
		x[i] = s.Summary.Median
		useLog = useLog && x[i] > 0
	}
	if len(points) < MinPoints {
		a.Reason = fmt.Sprintf("%s: a change point needs %d before one can be significant; until then the step against the previous experiment is the signal", units.Plural(len(points), "experiment"), MinPoints)
		return a
	}
	if useLog {
		for i := range x {
			x[i] = math.Log(x[i])
		}
	}
	for _, cp := range Find(x, seedOf(x)) {
		a.ChangePoints = append(a.ChangePoints, ChangePoint{Index: cp.Index, Experiment: a.Steps[cp.Index].Experiment, P: cp.P, Located: cp.Located})
	}
	// Before and After are the neighbouring segments'.
	for i := range a.ChangePoints {
		lo, hi := 0, len(x)
		if i > 0 {
			lo = a.ChangePoints[i-1].Index
		}
		if i+1 < len(a.ChangePoints) {
			hi = a.ChangePoints[i+1].Index
		}
		cp := &a.ChangePoints[i]
		cp.Before, cp.After = medianOf(a.Steps[lo:cp.Index]), medianOf(a.Steps[cp.Index:hi])
		cp.Ratio, cp.Direction = direction(cp.Before, cp.After, useLog, m, threshold)
		cp.Difference = !useLog
	}
	return a
}

// Find is the change points of x (EDivisive at Alpha), in series order,
// each located between its neighbours (Locate).
func Find(x []float64, seed uint64) []Split {
	found := EDivisive(x, Alpha, seed)
	slices.SortFunc(found, func(p, q Split) int { return cmp.Compare(p.Index, q.Index) })
	for i := range found {
		lo, hi := 0, len(x)
		if i > 0 {
			lo = found[i-1].Index
		}
		if i+1 < len(found) {
			hi = found[i+1].Index
		}
		found[i].Located = Locate(x, lo, found[i].Index, hi, seed)
	}
	return found
}

// locateResamples is how many series Locate draws.
const locateResamples = 400

// Locate is where a step at tau in the segment [lo, hi) of x may be,
// 95%: the range of the middle 95% of the best CUSUM splits of series
// drawn like this one — each side's level, plus residuals drawn with
// replacement from both sides' (a bootstrap of the fitted step). A step
// large against the noise is located at tau exactly; one near the noise,
// within a few experiments.
func Locate(x []float64, lo, tau, hi int, seed uint64) [2]int {
	if tau-lo < 1 || hi-tau < 1 || hi-lo < 3 {
		return [2]int{tau, tau}
	}
	left, right := stat.Mean(x[lo:tau], nil), stat.Mean(x[tau:hi], nil)
	var resid []float64
	for i := lo; i < hi; i++ {
		level := left
		if i >= tau {
			level = right
		}
		resid = append(resid, x[i]-level)
	}
	rng := rand.New(rand.NewPCG(seed, 0x10c))
	series := make([]float64, hi-lo)
	var cs cusumSums
	found := make([]int, locateResamples)
	for r := range found {
		for i := range series {
			level := left
			if lo+i >= tau {
				level = right
			}
			series[i] = level + resid[rng.IntN(len(resid))]
		}
		cs.fill(series)
		t, _ := cs.split(0, len(series))
		found[r] = lo + t
	}
	slices.Sort(found)
	cut := locateResamples * 25 / 1000
	return [2]int{found[cut], found[locateResamples-1-cut]}
}

// direction says which way a change from before to after went.
func direction(before, after float64, useLog bool, m stats.Metric, threshold float64) (float64, string) {
	var ratio, rel float64
	if useLog {
		ratio = after / before
		rel = math.Abs(math.Log(ratio))
		if rel <= math.Log1p(threshold) {
			return ratio, "none"
		}
	} else {
		ratio = after - before
		if math.Abs(ratio) <= threshold*math.Max(math.Abs(before), math.Abs(after)) {
			return ratio, "none"
		}
	}
	up := after > before
	if up == m.LowerIsBetter {
		return ratio, "regression"
	}
	return ratio, "improvement"
}

func medianOf(steps []Step) float64 {
	v := make([]float64, len(steps))
	for i, s := range steps {
		v[i] = s.Summary.Median
	}
	return stats.Summarize(v).Median
}

// changes are the facts of cur that differ from prev's.
func changes(prev, cur map[string]string) []Change {
	var out []Change
	for k, v := range cur {
		if w, ok := prev[k]; (ok || v != "") && w != v {
			out = append(out, Change{Fact: k, From: w, To: v})
		}
	}
	for k, w := range prev {
		if _, ok := cur[k]; !ok && w != "" {
			out = append(out, Change{Fact: k, From: w})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return cmp.Compare(a.Fact, b.Fact) })
	return out
}

// seedOf makes the permutations depend on the data only: the same
// history gives the same answer every time it is asked.
func seedOf(x []float64) uint64 {
	h := fnv.New64a()
	for _, v := range x {
		_ = binary.Write(h, binary.LittleEndian, v)
	}
	return h.Sum64()
}

// Split is a change point of a series: the points from Index on differ
// from those before, with permutation p-value P.
type Split struct {
	Index int
	P     float64
	// Located is where the change may be, 95% (set by Find).
	Located [2]int
}

// EDivisive finds the change points of x by e-divisive means, each kept
// while its permutation p-value is at most alpha, in the order found.
// Segments may be as short as one point, but a permutation test cannot
// tell a change in the last k of n points from an outlier group until
// 2/C(n, k) is below alpha: a clear change is found once two experiments
// after it agree in a history of 12, three in a history of 8. Until then
// the step against the previous experiment (Step.Previous) is the signal.
func EDivisive(x []float64, alpha float64, seed uint64) []Split {
	n := len(x)
	rng := rand.New(rand.NewPCG(seed, 0x1ab))
	bounds := []int{0, n} // segment edges, ascending
	var found []Split
	perm := make([]float64, n)
	// Two statistics, the level of each a share of alpha (Bonferroni):
	// the CUSUM, most powerful for a step, first; then the energy
	// distance with its right edge searched, for a level that came and
	// went, which the CUSUM of a segment averages away.
	tests := []struct {
		w     splitter
		alpha float64
	}{{&cusumSums{}, alpha * cusumShare}, {&energySums{}, alpha * (1 - cusumShare)}}
	for len(found) < n/2 {
		kept := false
		for _, test := range tests {
			tau, p := permutationTest(x, bounds, test.w, rng, perm, test.alpha)
			if tau >= 0 && p <= test.alpha {
				found = append(found, Split{Index: tau, P: p})
				bounds = append(bounds, tau)
				slices.Sort(bounds)
				kept = true
				break
			}
		}
		if !kept {
			break
		}
	}
	return found
}

// cusumShare is the CUSUM's share of each change point's alpha.
const cusumShare = 0.8

// permutationTest is the best split of x's segments by w and its
// permutation p-value, exact wherever it is at most alpha (above, the
// sampling stops once it must end above). Under no further change, the points within each
// segment are exchangeable: permute within segments, and count how often
// the best split of the permuted series is as strong — every
// permutation when they are few (an exact p), else a sample. tau is -1
// when no segment can be split.
func permutationTest(x []float64, bounds []int, w splitter, rng *rand.Rand, perm []float64, alpha float64) (int, float64) {
	tau, q := bestSplit(x, bounds, w)
	if tau < 0 {
		return -1, 1
	}
	strong := func(perm []float64) bool {
		_, qr := bestSplit(perm, bounds, w)
		return qr >= q*(1-1e-9)
	}
	ge := 0
	if n := eachPermutation(x, bounds, exactPermutations, func(perm []float64) {
		if strong(perm) {
			ge++
		}
	}); n > 0 {
		return tau, float64(ge) / float64(n)
	}
	for r := 1; r <= permutations; r++ {
		copy(perm, x)
		for s := 0; s+1 < len(bounds); s++ {
			seg := perm[bounds[s]:bounds[s+1]]
			rng.Shuffle(len(seg), func(i, j int) { seg[i], seg[j] = seg[j], seg[i] })
		}
		if strong(perm) {
			ge++
		}
		if float64(1+ge)/float64(1+permutations) > alpha {
			// The count can only grow: the p of all the permutations
			// would be above alpha too, so the decision is the full
			// test's. A split that is no change point — most of them — is
			// known as such after a few dozen permutations, not 999 (each
			// O(n²) for the energy statistic: seconds for a history of
			// 1,000 experiments). p is then the share so far (Besag and
			// Clifford's sequential estimate), or the bound, the larger.
			return tau, max(float64(ge)/float64(r), float64(1+ge)/float64(1+permutations))
		}
	}
	return tau, float64(1+ge) / float64(1+permutations)
}

// splitter is a split statistic: fill prepares it for a series, split
// is the best split of the segment [a, b) and its strength.
type splitter interface {
	fill(x []float64)
	split(a, b int) (int, float64)
}

// bestSplit is the strongest split over all segments; tau is -1 when no
// segment can be split.
func bestSplit(x []float64, bounds []int, w splitter) (tau int, q float64) {
	w.fill(x)
	tau, q = -1, math.Inf(-1)
	for s := 0; s+1 < len(bounds); s++ {
		if t, qs := w.split(bounds[s], bounds[s+1]); t > 0 && qs > q {
			tau, q = t, qs
		}
	}
	return tau, q
}

// cusumSums holds the running sums of x: S(j) = x_0 + ... + x_(j-1).
type cusumSums struct{ s []float64 }

func (ps *cusumSums) fill(x []float64) {
	ps.s = append(ps.s[:0], 0)
	for _, v := range x {
		ps.s = append(ps.s, ps.s[len(ps.s)-1]+v)
	}
}

// split is the best split of segment [a, b): the τ maximizing
//
//	Q(τ) = sqrt(m·k/(m+k)) · |mean(R) − mean(L)|
//
// with L = [a, τ), R = [τ, b), m and k their sizes — the standardized
// CUSUM, the difference of the means in standard errors up to the
// noise's standard deviation, which permuting within the segment does
// not change. It replaced the energy distance of e-divisive means
// (Matteson and James 2014), which weighs points by their order only
// and searched a right edge as well: a step of two standard deviations
// at 8 of 16 was found 66% of the time, now 79%, and a step two
// experiments before the end of 12, 39% now 93%. A level that came and
// went is found as two steps, the larger first.
func (ps *cusumSums) split(a, b int) (int, float64) {
	best, bq := 0, math.Inf(-1)
	for t := a + 1; t < b; t++ {
		m, k := float64(t-a), float64(b-t)
		left, right := (ps.s[t]-ps.s[a])/m, (ps.s[b]-ps.s[t])/k
		if q := math.Sqrt(m*k/(m+k)) * math.Abs(right-left); q > bq {
			best, bq = t, q
		}
	}
	return best, bq
}

// energySums holds W(i, j), the sum of |x_p - x_q| over i <= p < q < j.
type energySums struct {
	n int
	w []float64
}

func (es *energySums) at(i, j int) float64 { return es.w[i*(es.n+1)+j] }

// fill computes W for x in O(n²): W(i, j) = W(i+1, j) + the sum of
// |x_i - x_q| over i < q < j.
func (es *energySums) fill(x []float64) {
	n := len(x)
	if es.n != n {
		es.n, es.w = n, make([]float64, (n+1)*(n+1))
	}
	for i := n - 1; i >= 0; i-- {
		row := 0.0
		for j := i + 1; j <= n; j++ {
			if j-1 > i {
				row += math.Abs(x[i] - x[j-1])
			}
			es.w[i*(n+1)+j] = es.at(i+1, j) + row
		}
	}
}

// split is the best split of segment [a, b): the τ maximizing, over the
// right edge κ in (τ, b],
//
//	Q(τ, κ) = m·k/(m+k) · (2/(m·k)·Σ|L−R| − Σ|L−L|/C(m,2) − Σ|R−R|/C(k,2))
//
// with L = [a, τ), R = [τ, κ), m and k their sizes: Matteson and James'
// statistic with α = 1. Searching κ finds a segment that differs from
// both neighbours, such as a level that came and went.
func (es *energySums) split(a, b int) (int, float64) {
	best, bq := 0, math.Inf(-1)
	for t := a + 1; t < b; t++ {
		m := float64(t - a)
		wl := es.at(a, t)
		within := 0.0
		if t-a > 1 {
			within = wl / (m * (m - 1) / 2)
		}
		for k := t + 1; k <= b; k++ {
			kk := float64(k - t)
			wr := es.at(t, k)
			e := 2*(es.at(a, k)-wl-wr)/(m*kk) - within
			if k-t > 1 {
				e -= wr / (kk * (kk - 1) / 2)
			}
			if q := m * kk / (m + kk) * e; q > bq {
				best, bq = t, q
			}
		}
	}
	return best, bq
}

// eachPermutation calls fn with every series made by permuting x within
// the segments between bounds, one at a time in one buffer, and returns
// how many there were — or 0, calling nothing, when there are more than
// limit.
func eachPermutation(x []float64, bounds []int, limit int, fn func([]float64)) int {
	total := 1
	var segs [][][]int // per segment of two or more points, its orderings
	var starts []int
	for s := 0; s+1 < len(bounds); s++ {
		k := bounds[s+1] - bounds[s]
		if k < 2 {
			continue
		}
		for f := 2; f <= k; f++ {
			if total *= f; total > limit {
				return 0
			}
		}
		segs, starts = append(segs, orders(k)), append(starts, bounds[s])
	}
	perm := slices.Clone(x)
	digit := make([]int, len(segs)) // the ordering each segment is at
	for {
		for i, seg := range segs {
			for k, j := range seg[digit[i]] {
				perm[starts[i]+k] = x[starts[i]+j]
			}
		}
		fn(perm)
		i := 0
		for ; i < len(segs); i++ {
			if digit[i]++; digit[i] < len(segs[i]) {
				break
			}
			digit[i] = 0
		}
		if i == len(segs) {
			return total
		}
	}
}

// orders are all the orderings of 0..n-1.
func orders(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, o := range orders(n - 1) {
		for at := 0; at <= len(o); at++ {
			out = append(out, slices.Insert(slices.Clone(o), at, n-1))
		}
	}
	return out
}
