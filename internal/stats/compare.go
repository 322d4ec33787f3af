package stats

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// Obs is one run's value of a metric with its place in the schedule.
type Obs struct {
	Round int
	Slot  int
	Value float64
}

// Verdicts.
const (
	Faster       = "faster"
	Slower       = "slower"
	Same         = "same"
	Inconclusive = "inconclusive"
	// Failed: one side has no measured run that succeeded; nothing was
	// compared (the comparison says why, and is never dropped).
	Failed = "failed"
)

// Methods.
const (
	// MethodRatio: per-round log ratios variant/baseline, adjusted for
	// slot.
	MethodRatio = "paired"
	// MethodDifference: per-round differences variant - baseline, adjusted
	// for slot; for metrics where zero is a value (counts).
	MethodDifference = "paired-difference"
	// MethodTooFew: fewer than MinPairs rounds with both runs; no interval,
	// no verdict.
	MethodTooFew = "too-few-pairs"
	// MethodUnpaired and MethodUnpairedDifference: runs that shared no
	// rounds (CompareUnpaired): Welch's t-interval of the log values, or
	// of the values.
	MethodUnpaired           = "unpaired-welch"
	MethodUnpairedDifference = "unpaired-welch-difference"
	// MethodNone: a Failed comparison.
	MethodNone = "none"
)

// NoComparison is the comparison of a cell one side of which has no
// measured run that succeeded: no estimate, no interval, verdict Failed.
func NoComparison(m Metric) Comparison {
	nan := math.NaN()
	return Comparison{Ratio: nan, CI95: [2]float64{nan, nan}, Diff: nan, DiffCI: [2]float64{nan, nan}, P: nan, PAdjusted: nan,
		MDE: nan, SlotEffect: nan, PairMedian: nan, Method: MethodNone, Verdict: Failed, LowerIsBetter: m.LowerIsBetter, Family: 1}
}

// IsDifference says the estimate is a difference (variant - baseline), not
// a ratio.
func (c Comparison) IsDifference() bool {
	return c.Method == MethodDifference || c.Method == MethodUnpairedDifference
}

// logScale says the estimate is a log ratio.
func (c Comparison) logScale() bool { return c.Method == MethodRatio || c.Method == MethodUnpaired }

// MinPairs is the fewest paired rounds a comparison needs for an interval.
const MinPairs = 3

// Power is the probability with which the MDE is detected.
const Power = 0.8

// Comparison of a variant against the baseline on one metric.
type Comparison struct {
	// Ratio is variant/baseline with its 95% confidence interval.
	Ratio float64    `json:"ratio"`
	CI95  [2]float64 `json:"ci95"`
	// Diff is variant - baseline, per round, with its interval: the
	// estimate itself for MethodDifference.
	Diff   float64    `json:"diff"`
	DiffCI [2]float64 `json:"diff_ci95"`
	// P is the two-sided p-value of "no difference"; PAdjusted after Holm's
	// correction across the comparisons of its family (Finish).
	P         float64 `json:"p"`
	PAdjusted float64 `json:"p_adjusted"`
	// MDE is the smallest relative difference (0.05 = 5%) at which this
	// verdict rule — the threshold, the family's Holm correction, the
	// interval's t quantile — says faster or slower with probability
	// Power, given the noise these rounds showed. NaN without an interval.
	MDE float64 `json:"mde"`
	// RoundsNeeded is how many rounds in all would reach a verdict with
	// probability Power, averaged over what these rounds cannot know —
	// the true difference about the one estimated, the true noise about
	// the one seen (0 when this one is decided, -1 when no number of
	// rounds would: an estimate on the threshold's edge). It is an
	// assurance, not a guarantee: an inconclusive comparison cannot rule
	// out a true difference on the threshold, which no number of rounds
	// decides, so no count can promise 80% whatever the truth; stopping
	// when decided (Sequential) is what does.
	RoundsNeeded int    `json:"rounds_needed"`
	N            int    `json:"n"`
	Method       string `json:"method"`
	// SlotEffect is the estimated change per slot of distance between the
	// two runs of a round (drift within a round): relative for the ratio
	// method, absolute for the difference.
	SlotEffect    float64 `json:"slot_effect"`
	Verdict       string  `json:"verdict"`
	LowerIsBetter bool    `json:"lower_is_better"`
	// PairMedian is the median of the per-round ratios (of the differences,
	// for MethodDifference): what most rounds say, whatever one outlier
	// round does to the mean.
	PairMedian float64 `json:"pair_median"`
	// SlotFitted says the slot regression was fitted (8 or more pairs
	// whose slots differ); with fewer it would cost the interval more than
	// it corrects.
	SlotFitted bool `json:"slot_fitted"`
	// Family is how many comparisons Holm's correction counted this one
	// among; 1 for a derived metric, whose interval and verdict stand
	// alone.
	Family int `json:"family"`
	// Robust says outlier rounds (Outliers of them) made the estimate the
	// Hodges–Lehmann median of pairwise means of the per-round figures,
	// with Wilcoxon's signed-rank interval and p, instead of the mean (and
	// the slot regression is not fitted).
	Robust   bool `json:"robust"`
	Outliers int  `json:"outliers"`
	// Unpaired says the runs shared no rounds (two experiments): Welch's
	// t-interval of the log values (or of the values), which nothing
	// protects from what changed between the runs (CompareUnpaired).
	Unpaired bool `json:"unpaired"`
	// WarmupCut is how many paired rounds at the start were left out as
	// still warming up (CheckWarmup).
	WarmupCut int `json:"warmup_cut"`
	// Withheld says why no faster/slower/same was drawn from an interval
	// that may have allowed one (a side still warming up, an order not
	// randomized); "" when the verdict is the rule's.
	Withheld string `json:"withheld,omitempty"`
	// OutgrewWarmup says a side was still warming up when the rounds
	// ended, yet the verdict stands: the difference is larger than the
	// trend could have made (Warmup.Reach).
	OutgrewWarmup bool `json:"outgrew_warmup,omitempty"`
	// warmupChecked says the rounds passed the warm-up check (Checked):
	// the MDE and the rounds needed count what it costs.
	warmupChecked bool

	// The estimate on its own scale (log ratio or difference): est ± q·se
	// with df degrees of freedom; band is the threshold on that scale.
	est, se, df, band float64
	// wide widens the interval (and the p) past what se says, when the
	// rounds compared are those a warm-up check kept after a cut (Kept);
	// se stays the noise's, for planning. 0 is 1.
	wide float64
	// ci, for a robust estimate, is its own interval on the same scale
	// (not est ± t·se).
	ci   [2]float64
	slot float64 // the slot regression's slope, on the same scale
	// base is the baseline's mean over the pairs (the difference method's
	// unit for relative figures).
	base float64
}

// Compare estimates the variant against the baseline. Runs of the same
// round are paired; with d the per-round log ratio (or, for a Zeroable
// metric or any value that is not positive, the difference) and x the
// slot difference of the two runs, it fits d = a + b·x and reports a, the
// difference at equal slot, so drift within a round cannot bias it; with
// fewer than minSlotFit pairs or no spread of x, the mean of d. With fewer
// than MinPairs pairs there is no interval at all. Values that are not
// finite are no measurement and are left out. The verdict is provisional
// until Finish applies Holm across the family.
func Compare(base, variant []Obs, m Metric, threshold float64) Comparison {
	c := Comparison{LowerIsBetter: m.LowerIsBetter, Family: 1}
	byRound := map[int]Obs{}
	for _, o := range base {
		if finite(o.Value) {
			byRound[o.Round] = o
		}
	}
	var bs, vs, x []float64
	for _, o := range variant {
		if b, ok := byRound[o.Round]; ok && finite(o.Value) {
			bs, vs = append(bs, b.Value), append(vs, o.Value)
			x = append(x, float64(o.Slot-b.Slot))
		}
	}
	c.N = len(bs)
	if c.N < MinPairs {
		c.tooFew(base, variant)
		return c
	}
	useDiff := m.Zeroable
	for i := range bs {
		useDiff = useDiff || bs[i] <= 0 || vs[i] <= 0
	}
	d := make([]float64, len(bs))
	c.base = mean(bs)
	for i := range bs {
		if useDiff {
			d[i] = vs[i] - bs[i]
		} else {
			d[i] = math.Log(vs[i] / bs[i])
		}
	}
	c.Outliers = outlierRounds(d)
	if c.Outliers > 0 && c.N >= minRobust && c.N <= maxRobust {
		c.robust(d)
	} else {
		c.fit(d, x)
	}
	c.PAdjusted = c.P
	c.PairMedian = median(d)
	if !useDiff {
		c.PairMedian = math.Exp(c.PairMedian)
	}
	if useDiff {
		c.Method = MethodDifference
		c.band = threshold * math.Max(math.Abs(c.base), math.Abs(c.base+c.est))
	} else {
		c.Method = MethodRatio
		c.band = math.Log1p(threshold)
	}
	c.settle(1, threshold)
	return c
}

// Fields are the comparison's figures by their JSON names, with nil
// where a number is not finite (an interval that cannot be bounded, an
// MDE without data): JSON has no infinity.
func (c Comparison) Fields() map[string]any {
	return map[string]any{
		"ratio": JSONNumber(c.Ratio), "ci95": []any{JSONNumber(c.CI95[0]), JSONNumber(c.CI95[1])},
		"p": JSONNumber(c.P), "p_adjusted": JSONNumber(c.PAdjusted), "mde": JSONNumber(c.MDE),
		"rounds_needed": c.RoundsNeeded, "n": c.N, "method": c.Method, "slot_effect": JSONNumber(c.SlotEffect),
		"verdict": c.Verdict, "lower_is_better": c.LowerIsBetter, "family": c.Family,
		"diff": JSONNumber(c.Diff), "diff_ci95": []any{JSONNumber(c.DiffCI[0]), JSONNumber(c.DiffCI[1])},
		"robust": c.Robust, "outlier_rounds": c.Outliers, "unpaired": c.Unpaired,
		"warmup_cut": c.WarmupCut, "withheld": c.Withheld,
	}
}

// MarshalJSON writes Fields.
func (c Comparison) MarshalJSON() ([]byte, error) { return json.Marshal(c.Fields()) }

// JSONNumber is a value JSON can carry: NaN and infinities are null.
func JSONNumber(v float64) any {
	if finite(v) {
		return v
	}
	return nil
}

func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// tooFew describes what fewer than MinPairs pairs show: the ratio of
// medians, without interval, MDE or verdict.
func (c *Comparison) tooFew(base, variant []Obs) {
	c.Method, c.Verdict, c.P, c.PAdjusted = MethodTooFew, Inconclusive, math.NaN(), math.NaN()
	c.Ratio, c.MDE, c.Diff, c.SlotEffect = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	c.CI95 = [2]float64{math.NaN(), math.NaN()}
	c.DiffCI = c.CI95
	if mb, mv := median(finiteValues(base)), median(finiteValues(variant)); mb > 0 {
		c.Ratio = mv / mb
	}
	c.RoundsNeeded = MinPairs
}

func finiteValues(obs []Obs) []float64 {
	var v []float64
	for _, o := range obs {
		if finite(o.Value) {
			v = append(v, o.Value)
		}
	}
	return v
}

// minSlotFit is the fewest pairs the slot regression is fitted with: it
// spends a degree of freedom, which with few rounds widens the interval
// more than correcting a slot effect narrows it (and one outlier round
// can then tip the slope).
const minSlotFit = 8

// fit estimates d = a + b·x by least squares when there are minSlotFit
// or more pairs and x varies (the slot regression), else d = a; it sets
// est, se, df, P and the slope.
func (c *Comparison) fit(d, x []float64) {
	n := float64(len(d))
	mx, md := mean(x), mean(d)
	var sxx, sxy float64
	for i := range d {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (d[i] - md)
	}
	fitted := sxx > 0 && len(d) >= minSlotFit
	c.SlotFitted = fitted
	a, b, df := md, 0.0, n-1
	if fitted {
		b = sxy / sxx
		a, df = md-b*mx, n-2
	}
	var sse float64
	for i := range d {
		r := d[i] - a - b*x[i]
		sse += r * r
	}
	s := math.Sqrt(sse / df)
	se := s / math.Sqrt(n)
	if fitted {
		se = s * math.Sqrt(1/n+mx*mx/sxx)
	}
	c.est, c.se, c.df, c.slot = a, se, df, b
	switch {
	case se > 0:
		c.P = 2 * tDist(df).CDF(-math.Abs(a)/se)
	case a == 0:
		c.P = 1
	default: // every round differs by exactly the same amount
		c.P = 0
	}
}

func tDist(df float64) distuv.StudentsT { return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df} }

// tQuantile is tDist(df).Quantile(p), remembered (up to maxQuantiles of
// them): planning asks for the same few quantiles thousands of times.
func tQuantile(df, p float64) float64 {
	key := [2]float64{df, p}
	tQuantilesMu.Lock()
	q, ok := tQuantiles[key]
	tQuantilesMu.Unlock()
	if ok {
		return q
	}
	q = tDist(df).Quantile(p)
	tQuantilesMu.Lock()
	if len(tQuantiles) < maxQuantiles {
		tQuantiles[key] = q
	}
	tQuantilesMu.Unlock()
	return q
}

const maxQuantiles = 1 << 14

var (
	tQuantilesMu sync.Mutex
	tQuantiles   = map[[2]float64]float64{}
)

// settle computes, for a family of size family, the intervals on the
// user's scale, the verdict, the MDE and the rounds needed.
func (c *Comparison) settle(family int, threshold float64) {
	c.Family = family
	lo, hi := c.bounds()
	if c.logScale() {
		c.Ratio, c.CI95 = math.Exp(c.est), [2]float64{math.Exp(lo), math.Exp(hi)}
		c.SlotEffect = math.Expm1(c.slot)
		c.Diff, c.DiffCI = math.NaN(), [2]float64{math.NaN(), math.NaN()}
	} else {
		c.SlotEffect = c.slot
		c.Diff, c.DiffCI = c.est, [2]float64{lo, hi}
		c.Ratio, c.CI95 = math.NaN(), [2]float64{math.NaN(), math.NaN()}
		if c.base > 0 {
			c.Ratio, c.CI95 = (c.base+c.est)/c.base, [2]float64{(c.base + lo) / c.base, (c.base + hi) / c.base}
		}
	}
	c.Verdict = c.verdict()
	c.MDE = c.relative(c.mdeAt(c.N+c.WarmupCut, family))
	c.RoundsNeeded = c.roundsNeeded(family)
}

// Withhold makes the verdict inconclusive, saying why: the interval
// stands, but the rounds cannot support a verdict drawn from it.
func (c *Comparison) Withhold(why string) {
	if c.Verdict == Failed {
		return
	}
	decided := c.Verdict != Inconclusive
	c.Verdict, c.Withheld = Inconclusive, why
	switch {
	case !decided || (c.Method != MethodRatio && c.Method != MethodDifference):
	case why == WithheldSequential:
		c.RoundsNeeded = -1 // no number of rounds run in that order
	default:
		// The rounds the rule needs on this noise once the warm-up is
		// settled (or checkable): more than these, which did not decide.
		if c.RoundsNeeded = c.roundsNeeded(c.Family); c.RoundsNeeded >= 0 {
			c.RoundsNeeded = max(c.RoundsNeeded, MinWarmupPairs)
		} // -1: no number of rounds would
	}
}

// Why a verdict is withheld.
const (
	WithheldWarmingUp   = "still-warming-up"
	WithheldUncheckedWU = "too-few-rounds-to-check-warm-up"
	WithheldSequential  = "sequential-order"
)

// ApplyWarmup records what CheckWarmup found on the comparison: the
// rounds cut, and a verdict withheld while a side is still warming up
// (unless the warm-up pulls the estimate the other way than the verdict,
// which the settled level would only strengthen) — or, for a look that
// may stop an experiment (looking), while there are too few rounds to
// tell.
func (c *Comparison) ApplyWarmup(w Warmup, looking bool) {
	c.Checked(w.Cut)
	against := (c.Verdict == Faster || c.Verdict == Slower) && (c.est > 0) != (w.Direction > 0)
	switch {
	case w.Unsettled && !against && c.beyondReach(w.Reach):
		c.OutgrewWarmup = true
	case w.Unsettled && !against:
		c.Withhold(WithheldWarmingUp)
	case w.Unchecked && looking:
		c.Withhold(WithheldUncheckedWU)
	}
}

// FollowWarmup applies to the comparison of another metric of the same
// rounds what the warm-up check decided on the primary one (whose scale
// the warm-up's direction is on): the rounds cut, and a verdict withheld
// when the primary's was — unless this difference, too, is larger than
// the trend could have made.
func (c *Comparison) FollowWarmup(primary *Comparison, w Warmup) {
	c.Checked(w.Cut)
	switch {
	case primary.Withheld == WithheldWarmingUp || primary.OutgrewWarmup:
		if c.beyondReach(w.Reach) {
			c.OutgrewWarmup = true
		} else {
			c.Withhold(WithheldWarmingUp)
		}
	case primary.Withheld != "":
		c.Withhold(primary.Withheld)
	}
}

// beyondReach says the verdict is a difference too large for a warm-up
// that moves the per-round log ratios by reach to have made: its
// interval's near end, moved back towards zero by reach, still lies
// beyond the threshold. (A trend in a ratio of 11x under a machine's
// changing load is not what turned 1x into 11x.) Only a ratio's
// estimate is on the log scale the reach is measured on.
func (c *Comparison) beyondReach(reach float64) bool {
	if c.Method != MethodRatio || (c.Verdict != Faster && c.Verdict != Slower) || !finite(reach) {
		return false
	}
	lo, hi := c.bounds()
	if c.est > 0 {
		return lo-reach > c.band
	}
	return hi+reach < -c.band
}

// Checked records that the comparison's rounds passed the warm-up check,
// which cut the first cut of them: its MDE and rounds needed become those
// of the rule with the check, on the rounds before the cut (the check
// sometimes cuts or withholds with nothing warming up, which costs
// power). A comparison judged by a confidence sequence keeps its own.
func (c *Comparison) Checked(cut int) {
	c.WarmupCut = cut
	if c.Method != MethodRatio && c.Method != MethodDifference {
		return
	}
	c.warmupChecked = true
	c.MDE = c.relative(c.mdeAt(c.N+cut, c.Family))
	c.RoundsNeeded = c.roundsNeeded(c.Family)
}

// verdict applies the rule: faster or slower when the interval lies wholly
// beyond the threshold and the family's adjusted p is under 5%; same when
// it lies wholly inside the threshold.
func (c *Comparison) verdict() string {
	lo, hi := c.bounds()
	better := func(higher bool) string {
		if higher != c.LowerIsBetter {
			return Faster
		}
		return Slower
	}
	switch {
	case !finite(c.est) || !finite(c.se):
		return Inconclusive
	case lo > c.band && c.PAdjusted < 1-Confidence:
		return better(true)
	case hi < -c.band && c.PAdjusted < 1-Confidence:
		return better(false)
	case lo >= -c.band && hi <= c.band:
		return Same
	}
	return Inconclusive
}

// bounds is the 95% interval on the estimate's scale.
func (c *Comparison) bounds() (float64, float64) {
	w := max(c.wide, 1)
	if c.Robust {
		return c.est - w*(c.est-c.ci[0]), c.est + w*(c.ci[1]-c.est)
	}
	tq := tDist(c.df).Quantile(1 - (1-Confidence)/2)
	return c.est - w*tq*c.se, c.est + w*tq*c.se
}

// cutWiden is how much wider the interval of rounds a warm-up check kept
// after a cut is drawn than their own spread says. The check cuts rounds
// where the per-round ratios trend: through pure noise, a trend that
// starts low ends high, so the rounds kept lean away from the truth, and
// their 95% interval missed it 18% of the time at every count of rounds
// from 10 to 60 (the check cuts 12% of A/A comparisons there; 40,000
// simulated at each count): the 95th percentile of |estimate − truth| /
// half-width among them is 1.33 (8 rounds) to 1.45 (12). Widened so, the
// comparisons cut miss 5% (TestIntervalAfterAWarmupCutCoversTheTruth),
// and all of them 4.4% where the check off misses 4.7%
// (bench/stats_calibration -only warmup).
const cutWiden = 1.45

// Kept says the comparison was made on the rounds a warm-up check kept
// (CheckWarmup): after a cut, its interval and p are widened by cutWiden
// before any verdict is drawn (Finish), so that the selection does not
// make the interval miss more often than it says.
func (c *Comparison) Kept(w Warmup) {
	if w.Cut == 0 || (c.Method != MethodRatio && c.Method != MethodDifference) || !finite(c.se) {
		return
	}
	c.wide = cutWiden
	if se := c.wide * c.se; se > 0 { // a robust one's too: Wilcoxon's p cannot widen
		c.P = 2 * tDist(c.df).CDF(-math.Abs(c.est)/se)
	}
	c.PAdjusted = c.P
	c.settle(c.Family, 0)
}

// plan is a future experiment to judge by the noise and the estimate this
// one showed: its chance to reach a verdict averages over what this one
// cannot know — the true standard deviation (this one estimated it with
// pilotDF degrees of freedom), the future's own estimate of it (df), and,
// with effectSE > 0, the true effect (about the estimate, give or take its
// standard error). With checked, its rounds first pass the warm-up check
// (CheckWarmup), which with nothing warming up still cuts rounds or
// withholds a verdict now and then: that cost is counted too.
type plan struct {
	se       float64 // the future's true standard error, were σ what this one estimated
	pilotDF  float64
	df       float64
	band     float64
	family   int
	effectSE float64
	rounds   int // the future's paired rounds, for the warm-up check
	checked  bool
}

// grid is the number of quantiles each uncertainty is averaged over.
const grid = 16

// decideProb is the probability that the rule decides — faster/slower for
// an effect beyond the band, same for one inside it — when the effect is
// about delta.
func (p plan) decideProb(delta float64) float64 {
	if p.se <= 0 || !finite(p.se) || p.df < 1 {
		return math.NaN()
	}
	if !p.checked || p.rounds < MinWarmupPairs {
		return p.decideOn(delta, p.se, p.df, false)
	}
	sum := 0.0
	for _, o := range checkCost(p.rounds) {
		lost := float64(p.rounds - o.kept)
		if p.df-lost < 1 || o.unsettled && o.up {
			continue // nothing to decide on, or nothing decided
		}
		se := p.se * math.Sqrt(float64(p.rounds)/float64(o.kept))
		if o.kept < p.rounds {
			se *= cutWiden // the interval of the rounds a cut kept (Comparison.Kept)
		}
		sum += o.share * p.decideOn(delta, se, p.df-lost, o.unsettled)
	}
	return sum
}

// decideOn is decideProb on rounds whose standard error and degrees of
// freedom are se and df; a "same" counts as undecided when
// withheldInside (an unsettled warm-up withholds it whichever way it
// leans; one that leans with the effect was left out by the caller).
func (p plan) decideOn(delta, seRounds, df float64, withheldInside bool) float64 {
	tq := tQuantile(df, 1-(1-Confidence)/2)
	// Holm's first step, the strictest any comparison of the family faces:
	// conservative for the others.
	th := tQuantile(df, 1-(1-Confidence)/2/float64(p.family))
	us, rs := spread(p.pilotDF), spread(df)
	sum, count := 0.0, 0
	for _, u := range us {
		se := seRounds / u // σ = ŝ/(s/σ): the pilot's s/σ was u
		// The effect is known as well as the pilot's σ: its uncertainty
		// scales with σ (together, a t distribution about the estimate).
		effects := []float64{delta}
		if p.effectSE > 0 {
			effects = normalGrid(delta, p.effectSE/u)
		}
		for _, d := range effects {
			d = math.Abs(d)
			count += len(rs)
			for _, r := range rs {
				ese := se * r // the future's estimate of its standard error
				if d > p.band {
					need := math.Max(p.band+tq*ese, th*ese)
					sum += normalSF((need - d) / se)
				} else if w := p.band - tq*ese; w > 0 && !withheldInside {
					sum += normalCDF((w-d)/se) - normalCDF((-w-d)/se)
				}
			}
		}
	}
	return sum / float64(count)
}

// normalGrid is N(mu, sd²) at the midpoint quantiles.
func normalGrid(mu, sd float64) []float64 {
	out := make([]float64, grid)
	for i := range out {
		out[i] = mu + sd*math.Sqrt2*math.Erfinv(2*(float64(i)+0.5)/grid-1)
	}
	return out
}

func normalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
func normalSF(z float64) float64  { return 0.5 * math.Erfc(z/math.Sqrt2) }

// spread is s/σ, an estimated standard deviation over the true one, at
// the midpoint quantiles of its distribution (sqrt(χ²_df/df)); computed
// once per df.
func spread(df float64) []float64 {
	spreadMu.Lock()
	defer spreadMu.Unlock()
	if rs, ok := spreadCache[df]; ok {
		return rs
	}
	chi := distuv.ChiSquared{K: df}
	rs := make([]float64, grid)
	for i := range rs {
		rs[i] = math.Sqrt(chi.Quantile((float64(i)+0.5)/grid) / df)
	}
	spreadCache[df] = rs
	return rs
}

var (
	spreadMu    sync.Mutex
	spreadCache = map[float64][]float64{}
)

// mdeAt is the smallest effect, on the estimate's scale, that the rule
// calls faster or slower with probability Power in an experiment like this
// one of rounds paired rounds, with the noise this one showed (and its
// uncertainty).
func (c *Comparison) mdeAt(rounds, family int) float64 {
	if c.se == 0 {
		return c.band
	}
	if !finite(c.se) || c.se < 0 {
		return math.NaN()
	}
	p := c.planFor(rounds, family, 0)
	if !finite(p.decideProb(c.band + 100*c.se)) {
		return math.NaN()
	}
	lo, hi := c.band, c.band+100*c.se
	for range 40 {
		mid := (lo + hi) / 2
		if p.decideProb(mid) >= Power {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// planFor is an experiment of rounds paired rounds like this one: the
// same noise per round, the same parameters fitted, the same checks.
func (c Comparison) planFor(rounds, family int, effectSE float64) plan {
	lost := float64(c.N) - c.df // parameters fitted
	return plan{se: c.se * math.Sqrt(float64(c.N)/float64(rounds)), pilotDF: c.df, df: float64(rounds) - lost,
		band: c.band, family: family, effectSE: effectSE, rounds: rounds, checked: c.warmupChecked}
}

// maxRoundsFactor bounds the rounds a comparison may ask for, as a
// multiple of the rounds it has.
const maxRoundsFactor = 100

// roundsNeeded is the fewest rounds in all at which the rule decides with
// probability Power, the true effect being about the estimate (give or
// take its standard error) and the noise what these rounds showed; 0 when
// this comparison is decided, -1 when even maxRoundsFactor times the
// rounds would not do (an estimate on the threshold's edge).
func (c *Comparison) roundsNeeded(family int) int {
	if c.Verdict != Inconclusive {
		return 0
	}
	return c.roundsAt(c.est, c.se, family, c.N+c.WarmupCut) // more than it has: these did not decide
}

// roundsAt is the fewest rounds above from at which the rule decides with
// probability Power when the effect, on the estimate's scale, is about
// delta (give or take effectSE), with the noise these rounds showed; -1
// beyond maxRoundsFactor times them.
func (c Comparison) roundsAt(delta, effectSE float64, family, from int) int {
	if c.Method == MethodTooFew || !finite(c.se) || c.se <= 0 {
		return -1
	}
	n := c.N + c.WarmupCut
	prob := func(m int) float64 { return c.planFor(m, family, effectSE).decideProb(delta) }
	lo, hi := max(from, int(float64(c.N)-c.df)), maxRoundsFactor*n // prob(lo) < Power <= prob(hi), roughly monotone
	if prob(hi) < Power {
		return -1
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if prob(mid) >= Power {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// Finish applies Holm's correction across a family of comparisons (a
// report's primary metrics) and settles their verdicts, MDEs and rounds
// needed for that family. Comparisons without an interval are not
// counted.
func Finish(cs []*Comparison, threshold float64) {
	var family []*Comparison
	for _, c := range cs {
		if c.Method != MethodTooFew && finite(c.P) {
			family = append(family, c)
		}
	}
	sort.SliceStable(family, func(a, b int) bool { return family[a].P < family[b].P })
	m := len(family)
	running := 0.0
	for rank, c := range family {
		running = math.Max(running, math.Min(1, float64(m-rank)*c.P))
		c.PAdjusted = running
	}
	for _, c := range family {
		c.settle(m, threshold)
	}
}

// MDEAt is the MDE (relative) an experiment of rounds rounds would have,
// with the noise this comparison showed, in a Holm family of size family.
// NaN without an interval.
func (c Comparison) MDEAt(rounds, family int) float64 {
	if c.Method == MethodTooFew || !finite(c.se) || rounds <= int(float64(c.N)-c.df) {
		return math.NaN()
	}
	return c.relative(c.mdeAt(rounds, family))
}

// RoundsFor is the fewest rounds at which an experiment with the noise
// this comparison showed detects a true relative difference effect (0.05
// = 5%) with probability Power, in a Holm family of size family; -1 beyond
// maxRoundsFactor times its rounds.
func (c Comparison) RoundsFor(effect float64, family int) int {
	delta := math.Log1p(effect)
	if c.IsDifference() {
		delta = effect * c.base
	}
	return c.roundsAt(delta, 0, family, 0)
}

// NearThreshold says the estimate lies within a quarter of the threshold
// of the threshold itself (on either side of zero): where no number of
// rounds decides, it is the threshold, not the noise, that is the
// obstacle.
func (c Comparison) NearThreshold() bool {
	return finite(c.est) && c.band > 0 && math.Abs(math.Abs(c.est)-c.band) < c.band/4
}

// RoundCV is RoundSD as a share of the baseline: how much one round
// varies, whatever the method.
func (c Comparison) RoundCV() float64 { return c.relative(c.RoundSD()) }

// RoundSD is the standard deviation of one round's estimate (its log
// ratio, or difference): the noise of a single round, whatever the count.
func (c Comparison) RoundSD() float64 {
	if c.Method == MethodTooFew {
		return math.NaN()
	}
	return c.se * math.Sqrt(float64(c.N))
}

// relative turns an effect on the estimate's scale into a relative one.
func (c Comparison) relative(scale float64) float64 {
	switch {
	case c.logScale():
		return math.Expm1(scale)
	case c.base > 0:
		return scale / c.base
	}
	return math.NaN()
}

// CompareUnpaired estimates variant against base from runs that cannot be
// paired — two experiments run at different times — by Welch's
// t-interval on the log values. Nothing cancels what changed between the
// two (the machine, the target's state): the interval covers only the
// runs' own noise. The verdict is provisional until Finish.
func CompareUnpaired(base, variant []float64, m Metric, threshold float64) Comparison {
	c := Comparison{LowerIsBetter: m.LowerIsBetter, Family: 1, Unpaired: true, SlotEffect: math.NaN()}
	b, v := finiteOnly(base), finiteOnly(variant)
	c.N = min(len(b), len(v))
	if len(b) < 2 || len(v) < 2 {
		c.tooFew(obsOf(b), obsOf(v))
		return c
	}
	useDiff := m.Zeroable
	for _, x := range append(slices.Clone(b), v...) {
		useDiff = useDiff || x <= 0
	}
	tb, tv := b, v
	if !useDiff {
		tb, tv = logs(b), logs(v)
	}
	mb, mv := mean(tb), mean(tv)
	vb, vv := variance(tb)/float64(len(tb)), variance(tv)/float64(len(tv))
	c.est, c.se = mv-mb, math.Sqrt(vb+vv)
	// Welch–Satterthwaite degrees of freedom.
	c.df = (vb + vv) * (vb + vv) / (vb*vb/float64(len(tb)-1) + vv*vv/float64(len(tv)-1))
	if !finite(c.df) || c.df < 1 {
		c.df = float64(min(len(tb), len(tv)) - 1)
	}
	c.base = mean(b)
	switch {
	case c.se > 0:
		c.P = 2 * tDist(c.df).CDF(-math.Abs(c.est)/c.se)
	case c.est == 0:
		c.P = 1
	default:
		c.P = 0
	}
	c.PAdjusted = c.P
	c.Method, c.band = MethodUnpairedDifference, threshold*math.Max(math.Abs(c.base), math.Abs(c.base+c.est))
	if !useDiff {
		c.Method, c.band = MethodUnpaired, math.Log1p(threshold)
	}
	c.settle(1, threshold)
	c.PairMedian = math.NaN()
	return c
}

func finiteOnly(v []float64) []float64 {
	var out []float64
	for _, x := range v {
		if finite(x) {
			out = append(out, x)
		}
	}
	return out
}

func obsOf(v []float64) []Obs {
	out := make([]Obs, len(v))
	for i, x := range v {
		out[i] = Obs{Round: i, Value: x}
	}
	return out
}

func logs(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = math.Log(x)
	}
	return out
}

func variance(v []float64) float64 {
	m := mean(v)
	var ss float64
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return ss / float64(len(v)-1)
}
