package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// Warmup is what CheckWarmup found at the start of a comparison.
type Warmup struct {
	// Cut is how many paired rounds at the start are left out: the
	// per-round ratios still settled over them. From is the first round
	// kept.
	Cut, From int
	// Unsettled says the ratios still trend after the most that may be
	// cut (half the rounds): one side is still warming up, and no
	// verdict may be drawn from these rounds.
	Unsettled bool
	// Unchecked says there are fewer than MinWarmupPairs rounds: too few
	// to tell a warm-up from a difference.
	Unchecked bool
	// Side is which side moved over the rounds cut (or, unsettled, over
	// the rounds): 0 the baseline, 1 the variant, -1 unknown.
	Side int
	// Direction is +1 when the rounds cut had the variant higher against
	// the baseline than the rounds kept, -1 when lower: the way a warm-up
	// still under way biases the estimate.
	Direction int
	// Reach, when Unsettled, bounds how far (in log ratio) the trend in
	// the rounds kept could have carried their estimate past the level
	// it settles at. A difference that stands when its interval's near
	// end is moved back by Reach is no warm-up's doing.
	Reach float64
}

// MinWarmupPairs is the fewest paired rounds in which a warm-up can be
// told from a difference: with fewer, no trend test reaches 5%.
const MinWarmupPairs = 6

// warmupAlpha is the level of the trend test that keeps a round as
// settled: liberal, because a warm-up it misses becomes a false verdict,
// while one it imagines costs a round.
const warmupAlpha = 0.10

// lookAlpha is the one-sided level at which what a look keeps may not
// lean the way a warm-up would push its estimate.
const lookAlpha = 0.20

// CheckWarmup finds the rounds at the start of a comparison in which one
// side was still warming up (a fresh build's cold caches, a cache the
// other side had already filled) and returns the rest. It works on the
// per-round log ratios in round order, where drift both sides share
// cancels. k is the fewest leading rounds after which the ratios no longer
// trend (a least-squares slope over round, two-sided p >= warmupAlpha,
// over MinWarmupPairs rounds or more); twice k are cut, because a decay
// that has sunk under the noise still biases the mean. When that would
// cut more than half the rounds or leave fewer than MinWarmupPairs, the
// comparison is Unsettled: no verdict may be drawn yet. Any monotone
// settling shows as a slope; its form does not matter.
//
// looks says the comparison is looked at after every round (stopping
// when decided), where one look that misses a warm-up ends the
// experiment on it: the cut is then the largest any earlier look would
// have made (a warm-up seen at round 8 is not forgotten at round 9
// because the test, on more rounds, happens to miss it), and the rounds
// kept must not even lean (one-sided p < lookAlpha) the way that
// inflates the estimate, or the comparison is Unsettled — at six rounds a
// warm-up's slope is often under the two-sided test's power.
func CheckWarmup(base, variant []Obs, looks bool) (b, v []Obs, w Warmup) {
	w.Side = -1
	ps := logRatios(base, variant)
	n := len(ps)
	if n < MinWarmupPairs {
		w.Unchecked = true
		return base, variant, w
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].round < ps[j].round })
	d := make([]float64, n)
	for i, p := range ps {
		d[i] = p.d
	}
	k, unsettled, direction := warmupCut(d, looks)
	w.Unsettled, w.Direction = unsettled, direction
	if unsettled {
		s := &trendSums{}
		for i, x := range d {
			s.add(i, x)
		}
		w.Reach = s.reach(k)
	}
	if k == 0 {
		return base, variant, w
	}
	w.Cut, w.From = k, ps[k].round
	w.Side = movedSide(base, variant, w.From)
	keep := func(obs []Obs) []Obs {
		var out []Obs
		for _, o := range obs {
			if o.Round >= w.From {
				out = append(out, o)
			}
		}
		return out
	}
	return keep(base), keep(variant), w
}

// warmupCut is CheckWarmup's judgement of the per-round log ratios d in
// round order: the rounds to cut, whether the rest is unsettled, and the
// direction a warm-up under way pushes the estimate (0 when the cut
// decides it).
func warmupCut(d []float64, looks bool) (k int, unsettled bool, direction int) {
	n := len(d)
	s := &trendSums{}
	for i, x := range d {
		s.add(i, x)
	}
	first := n
	if looks {
		first = MinWarmupPairs
	}
	// Past half the rounds a cut makes the comparison Unsettled whatever
	// its size: the search stops there, so a series that trends
	// throughout costs O(n²) slope tests at worst, not O(n³).
	most := n / 2
	for end := first; end <= n && k <= most; end++ {
		j := 0
		for end-j >= MinWarmupPairs && 2*j <= most && s.trends(j, end) {
			j++
		}
		// j is where the trend test stops seeing a slope; the decay goes on
		// under the noise about as long again (an exponential's bias shrinks
		// by e^(-k/τ) more), so 2j rounds are cut.
		k = max(k, 2*j)
	}
	// A few rounds far off and then none (a cold cache for three runs)
	// barely tilt a slope over many: that step is found on its own, and
	// one round more goes as a margin.
	if m := stepAt(s, most); m > 0 {
		k = max(k, m+1)
	}
	if n-k < MinWarmupPairs || k > most {
		unsettled, k = true, min(k, most)
	}
	if looks && k < n {
		// A look may stop the experiment on this estimate: what is kept
		// must not lean, even below the cut's level, the way a warm-up
		// would push the estimate. Withholding costs a round or two; a
		// warm-up mistaken for a difference costs the answer.
		if slope, p := s.slope(k, n); p < lookAlpha && (slope < 0) == (s.mean(k, n) > 0) {
			unsettled, direction = true, 1
			if slope > 0 {
				direction = -1
			}
		}
	}
	if k > 0 && direction == 0 {
		direction = 1
		if s.mean(0, k) < s.mean(k, n) {
			direction = -1
		}
	}
	return k, unsettled, direction
}

// checkOutcome is one way the warm-up check ends on rounds with nothing
// warming up in them: the rounds it keeps, whether it finds the rest
// unsettled, and whether it then takes the warm-up to push the estimate
// up (which withholds a verdict above zero, not one below); share is its
// probability.
type checkOutcome struct {
	kept          int
	unsettled, up bool
	share         float64
}

// checkDraws is how many series of pure noise checkCost judges (its
// shares' error is about 1%); past checkLongest rounds the outcomes of
// checkLongest are scaled (what the check keeps is by then a steady share
// of the rounds). checkBuckets bounds the outcomes kept of each kind.
const (
	checkDraws   = 2000
	checkLongest = 200
	checkBuckets = 3
)

// checkCost is the warm-up check's outcomes on n rounds of pure noise
// (simulateCheckCost), read from the table computed once for every n up
// to checkLongest (checkcost_table.go): the simulation is a fixed
// function of n, and computing it in every process that compares — 2,000
// draws of each n the comparison asks about — was most of iolab cmd's
// own CPU in a run of 22 short commands.
func checkCost(n int) []checkOutcome {
	if n > checkLongest {
		out := slices.Clone(checkCost(checkLongest))
		for i := range out {
			out[i].kept = max(MinWarmupPairs/2, out[i].kept*n/checkLongest)
		}
		return out
	}
	return checkCostTable[max(n, 0)]
}

// simulateCheckCost is the warm-up check's outcomes on n rounds of pure
// noise, by simulation: the check's tests are location- and scale-free,
// so for normal noise they depend on n alone (and not on the effect). A
// verdict rule that checks for warm-up decides less often than one that
// does not, and its MDE and rounds needed must say so. The rounds kept
// are grouped into a few buckets, each counted as its fewest (the cost is
// overstated a little, never understated). From a fixed seed: the table
// checkCost reads is this for every n, and TestCheckCostTable says when
// they part (go test ./internal/stats -run TestCheckCostTable -update
// writes it anew).
func simulateCheckCost(n int) []checkOutcome {
	rng := rand.New(rand.NewPCG(uint64(n), 0x5eed))
	kinds := map[checkOutcome][]int{} // by kind (kept 0), the rounds each draw kept
	d := make([]float64, n)
	for range checkDraws {
		for i := range d {
			d[i] = rng.NormFloat64()
		}
		k, unsettled, direction := warmupCut(d, false)
		kind := checkOutcome{unsettled: unsettled, up: unsettled && direction > 0}
		kinds[kind] = append(kinds[kind], n-k)
	}
	var out []checkOutcome
	for _, kind := range []checkOutcome{{}, {unsettled: true}, {unsettled: true, up: true}} {
		kept := kinds[kind]
		sort.Sort(sort.Reverse(sort.IntSlice(kept)))
		whole := sort.Search(len(kept), func(i int) bool { return kept[i] < n })
		if whole > 0 {
			out = append(out, checkOutcome{kept: n, unsettled: kind.unsettled, up: kind.up, share: float64(whole) / checkDraws})
		}
		rest := kept[whole:]
		if kind.up && len(rest) > 0 { // nothing decided: how many rounds were kept does not matter
			out = append(out, checkOutcome{kept: rest[len(rest)-1], unsettled: true, up: true, share: float64(len(rest)) / checkDraws})
			continue
		}
		for b := range checkBuckets {
			part := rest[b*len(rest)/checkBuckets : (b+1)*len(rest)/checkBuckets]
			if len(part) > 0 {
				out = append(out, checkOutcome{kept: part[len(part)-1], unsettled: kind.unsettled, up: kind.up, share: float64(len(part)) / checkDraws})
			}
		}
	}
	return out
}

// warmupZ is how many standard errors the first rounds must lie from the
// rest to be a step of their own.
const warmupZ = 3

// stepAt is the number of leading values, at most most, whose mean lies
// furthest from the mean of the rest in standard errors (of a mean of
// that many values like the rest), when that is beyond warmupZ; else 0.
// MSER (White 1997) would cut where what is left is steadiest, which a
// few low rounds after the step pull several rounds too far, and its
// cut then fails a test that it lies apart.
func stepAt(s *trendSums, most int) int {
	n := len(s.x) - 1
	best, bestK := float64(warmupZ), 0
	for k := 1; k <= most && n-k >= 2; k++ {
		m := float64(n - k)
		mu := s.mean(k, n)
		sd := math.Sqrt(math.Max(0, s.xx[n]-s.xx[k]-m*mu*mu) / (m - 1))
		z := math.Abs(s.mean(0, k)-mu) * math.Sqrt(float64(k)) / sd
		if sd == 0 && s.mean(0, k) != mu {
			z = math.Inf(1)
		}
		if z > best {
			best, bestK = z, k
		}
	}
	return bestK
}

// trendSums are running sums of a series x_i (and x_i², i·x_i), from which
// the least-squares slope over any stretch of it comes in constant time.
type trendSums struct{ x, xx, ix []float64 }

func (s *trendSums) add(i int, v float64) {
	if len(s.x) == 0 {
		s.x, s.xx, s.ix = []float64{0}, []float64{0}, []float64{0}
	}
	s.x = append(s.x, s.x[i]+v)
	s.xx = append(s.xx, s.xx[i]+v*v)
	s.ix = append(s.ix, s.ix[i]+float64(i)*v)
}

func (s *trendSums) mean(from, to int) float64 { return (s.x[to] - s.x[from]) / float64(to-from) }

// trends says the least-squares slope of x over i, for i in [from, to),
// differs from zero at warmupAlpha (two-sided).
func (s *trendSums) trends(from, to int) bool {
	_, p := s.slope(from, to)
	return 2*p < warmupAlpha
}

// slope is the least-squares slope of x over i, for i in [from, to), and
// the one-sided p-value (t test) of a slope of its sign beyond zero; 1
// over fewer than 4 values.
func (s *trendSums) slope(from, to int) (float64, float64) {
	if to-from < 4 {
		return 0, 1
	}
	slope, se := s.fit(from, to)
	switch {
	case se > 0:
		return slope, tDist(float64(to-from) - 2).CDF(-math.Abs(slope) / se)
	case slope != 0:
		return slope, 0
	}
	return 0, 1
}

// fit is the least-squares slope of x over i, for i in [from, to) (three
// values or more), and its standard error.
func (s *trendSums) fit(from, to int) (slope, se float64) {
	m := float64(to - from)
	mi, mx := float64(from+to-1)/2, s.mean(from, to)
	sii := m * (m*m - 1) / 12
	sxy := s.ix[to] - s.ix[from] - m*mi*mx
	slope = sxy / sii
	sse := math.Max(0, s.xx[to]-s.xx[from]-m*mx*mx-slope*sxy)
	return slope, math.Sqrt(sse / (m - 2) / sii)
}

// reach bounds how far a trend still under way in the rounds kept,
// [from, n), could have moved their mean from the level the series
// settles at: the slope's upper 95% bound, in size, over as many rounds
// as were kept — half of them for the mean to the last round kept, half
// for the settling the experiment did not see. Inf over fewer than 4
// rounds, where no slope is bounded.
func (s *trendSums) reach(from int) float64 {
	n := len(s.x) - 1
	if n-from < 4 {
		return math.Inf(1)
	}
	slope, se := s.fit(from, n)
	m := float64(n - from)
	return (math.Abs(slope) + tDist(m-2).Quantile(1-(1-Confidence)/2)*se) * m
}

// movedSide is the side whose own runs before round from lie further (in
// log terms) from its runs after: 0 the baseline, 1 the variant.
func movedSide(base, variant []Obs, from int) int {
	shift := func(obs []Obs) float64 {
		var head, tail []float64
		for _, o := range obs {
			if !finite(o.Value) || o.Value <= 0 {
				continue
			}
			if o.Round < from {
				head = append(head, math.Log(o.Value))
			} else {
				tail = append(tail, math.Log(o.Value))
			}
		}
		if len(head) == 0 || len(tail) == 0 {
			return 0
		}
		return math.Abs(mean(head) - mean(tail))
	}
	if shift(variant) >= shift(base) {
		return 1
	}
	return 0
}

// roundRatio is one round's log ratio of the variant's run to the
// baseline's.
type roundRatio struct {
	round int
	d     float64
}

// logRatios pairs the runs of each round (values not finite or not
// positive left out: a zero cannot be a ratio), in the variant's order.
func logRatios(base, variant []Obs) []roundRatio {
	byRound := map[int]float64{}
	for _, o := range base {
		if finite(o.Value) && o.Value > 0 {
			byRound[o.Round] = o.Value
		}
	}
	var out []roundRatio
	for _, o := range variant {
		if b, ok := byRound[o.Round]; ok && finite(o.Value) && o.Value > 0 {
			out = append(out, roundRatio{o.Round, math.Log(o.Value / b)})
		}
	}
	return out
}
