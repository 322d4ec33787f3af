package stats

import (
	"math"
	"sort"
	"strings"

	"golang.org/x/perf/benchmath"
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
)

// Comparison of a variant against the baseline on one metric.
type Comparison struct {
	// Ratio is variant/baseline with its 95% confidence interval.
	Ratio float64    `json:"ratio"`
	CI95  [2]float64 `json:"ci95"`
	// P is the two-sided p-value of "no difference"; PAdjusted after Holm's
	// correction across the comparisons of one report.
	P         float64 `json:"p"`
	PAdjusted float64 `json:"p_adjusted"`
	// MDE is the smallest relative difference these data detect with 80%
	// power at 5% significance (0.05 = 5%).
	MDE float64 `json:"mde"`
	// RoundsNeeded is how many rounds would bring the MDE under the
	// threshold (0 when it already is).
	RoundsNeeded int `json:"rounds_needed"`
	N            int `json:"n"`
	// Method is "paired" (per-round log ratios, adjusted for slot) or
	// "unpaired" (medians and Mann-Whitney).
	Method string `json:"method"`
	// SlotEffect is the estimated relative change per slot of distance
	// between the two runs of a round (drift within a round).
	SlotEffect    float64 `json:"slot_effect"`
	Verdict       string  `json:"verdict"`
	LowerIsBetter bool    `json:"lower_is_better"`
}

// LowerIsBetter says a metric's direction: latencies, times, CPU and memory
// are better low; rates are better high.
func LowerIsBetter(metric string) bool {
	for _, suffix := range []string{"_ns", "wall_s", "user_s", "sys_s", "cpu_s", "cpu_us_per_op", "rss_bytes", "peak_bytes"} {
		if strings.HasSuffix(metric, suffix) {
			return true
		}
	}
	return false
}

// Compare estimates variant/baseline. Runs of the same round are paired:
// with d = log(variant) - log(baseline) and x = slot(variant) - slot(baseline),
// it fits d = a + b·x and reports exp(a), the ratio at equal slot, so drift
// within a round cannot bias it. With fewer than 3 pairs it falls back to
// the ratio of medians and a Mann-Whitney test. The verdict is provisional
// until Holm adjusts P across a report (see Finish).
func Compare(base, variant []Obs, lowerIsBetter bool, threshold float64) Comparison {
	c := Comparison{LowerIsBetter: lowerIsBetter}
	byRound := map[int]Obs{}
	for _, o := range base {
		if o.Value > 0 {
			byRound[o.Round] = o
		}
	}
	var d, x []float64
	for _, o := range variant {
		if b, ok := byRound[o.Round]; ok && o.Value > 0 {
			d = append(d, math.Log(o.Value/b.Value))
			x = append(x, float64(o.Slot-b.Slot))
		}
	}
	if len(d) >= 3 {
		c.paired(d, x)
	} else {
		c.unpaired(values(base), values(variant))
	}
	c.PAdjusted = c.P
	c.RoundsNeeded = roundsNeeded(c.MDE, threshold, c.N)
	c.Verdict = verdict(c, threshold)
	return c
}

func values(obs []Obs) []float64 {
	v := make([]float64, 0, len(obs))
	for _, o := range obs {
		v = append(v, o.Value)
	}
	return v
}

func (c *Comparison) paired(d, x []float64) {
	n := float64(len(d))
	c.N, c.Method = len(d), "paired"
	mx, md := mean(x), mean(d)
	var sxx, sxy float64
	for i := range d {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (d[i] - md)
	}
	a, b, df := md, 0.0, n-1
	if sxx > 0 && len(d) >= 4 {
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
	if b != 0 {
		se = s * math.Sqrt(1/n+mx*mx/sxx)
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
	tq := t.Quantile(0.975)
	c.Ratio = math.Exp(a)
	c.CI95 = [2]float64{math.Exp(a - tq*se), math.Exp(a + tq*se)}
	c.SlotEffect = math.Exp(b) - 1
	if se > 0 {
		c.P = 2 * t.CDF(-math.Abs(a)/se)
	} else if a == 0 {
		c.P = 1
	}
	c.MDE = math.Exp((tq+t.Quantile(0.8))*se) - 1
}

func (c *Comparison) unpaired(base, variant []float64) {
	c.N, c.Method = min(len(base), len(variant)), "unpaired"
	if len(base) == 0 || len(variant) == 0 {
		c.P, c.MDE, c.Ratio = 1, math.Inf(1), math.NaN()
		c.CI95 = [2]float64{math.Inf(-1), math.Inf(1)}
		return
	}
	sb, sv := Summarize(base), Summarize(variant)
	c.Ratio = sv.Median / sb.Median
	c.CI95 = [2]float64{0, math.Inf(1)}
	if sb.CI95 != nil && sv.CI95 != nil && sb.CI95[0] > 0 {
		c.CI95 = [2]float64{sv.CI95[0] / sb.CI95[1], sv.CI95[1] / sb.CI95[0]}
	}
	cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(base, &benchmath.DefaultThresholds),
		benchmath.NewSample(variant, &benchmath.DefaultThresholds))
	c.P = cmp.P
	c.MDE = 2.8 * math.Sqrt(sb.CV*sb.CV/float64(len(base))+sv.CV*sv.CV/float64(len(variant)))
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// roundsNeeded scales n so that the MDE, which shrinks as 1/sqrt(n), falls
// under the threshold.
func roundsNeeded(mde, threshold float64, n int) int {
	if mde <= threshold || n == 0 {
		return 0
	}
	if math.IsInf(mde, 0) || math.IsNaN(mde) {
		return -1
	}
	r := math.Log1p(mde) / math.Log1p(threshold)
	return int(math.Ceil(float64(n) * r * r))
}

func verdict(c Comparison, threshold float64) string {
	up, down := 1+threshold, 1/(1+threshold)
	lo, hi := c.CI95[0], c.CI95[1]
	better := func(higher bool) string {
		if higher != c.LowerIsBetter {
			return Faster
		}
		return Slower
	}
	switch {
	case math.IsNaN(c.Ratio):
		return Inconclusive
	case lo > up && c.PAdjusted < 0.05:
		return better(true)
	case hi < down && c.PAdjusted < 0.05:
		return better(false)
	case lo >= down && hi <= up:
		return Same
	}
	return Inconclusive
}

// Finish applies Holm's correction to the comparisons of one report and
// settles their verdicts.
func Finish(cs []*Comparison, threshold float64) {
	idx := make([]int, len(cs))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return cs[idx[a]].P < cs[idx[b]].P })
	m := len(cs)
	running := 0.0
	for rank, i := range idx {
		adj := math.Min(1, float64(m-rank)*cs[i].P)
		running = math.Max(running, adj)
		cs[i].PAdjusted = running
	}
	for _, c := range cs {
		c.Verdict = verdict(*c, threshold)
	}
}
