// Command stats_calibration checks iolab's comparison by simulation: it
// repeats A/A experiments (no real difference) under the ways real targets
// misbehave, and experiments with a real effect, and prints the rate of
// false faster/slower verdicts and the power, with Monte-Carlo errors, for
// the randomized schedule and for the sequential one legacy benchmarks use.
//
//	go run ./bench/stats_calibration [-trials 2000] [-only drift,mde,rounds,warmup,sequential,history]
package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/stats"
)

// scenario is a target's behaviour over one experiment of two variants.
type scenario struct {
	name   string
	effect float64 // true ratio b/a of the metric (a time: lower is better)
	cv     float64
	rounds int
	// level is the target's slowdown at a fraction f of the experiment.
	level func(f float64) float64
	// firstRunFactor multiplies the very first measured run.
	firstRunFactor float64
	// outliers is the share of runs, either variant's, made 3x slower (a
	// stall, a neighbour's backup).
	outliers float64
	// warmup rounds come first, unmeasured; warmupTau > 0 makes the
	// variant alone 1+e^(-k/warmupTau) slower on its k-th run (a fresh
	// build's cold caches), warm-up rounds included.
	warmup    int
	warmupTau float64
	// noCheck judges without stats.CheckWarmup, as iolab did before it.
	noCheck bool
	// variantCV, when set, is the variant's own noise (unequal noise: a
	// build with a lock whose waits vary).
	variantCV float64
	// noise is the shape of the runs' noise: normal (""), lognormal of
	// CV cv, bimodal (half the runs 2x, besides cv), or Pareto of α 1.5
	// (mean 1: a heavy tail, infinite variance; besides cv).
	noise string
	// variants is how many variants are compared with the baseline (0
	// and 1 are one): a family, judged together (Holm).
	variants int
}

// noiseFactor is one run's noise factor of s's shape.
func noiseFactor(s scenario, cv float64, rng *rand.Rand) float64 {
	switch s.noise {
	case "lognormal":
		sigma := math.Sqrt(math.Log1p(cv * cv))
		return math.Exp(sigma*rng.NormFloat64() - sigma*sigma/2)
	case "bimodal":
		f := 1 + cv*rng.NormFloat64()
		if rng.Float64() < 0.5 {
			f *= 2
		}
		return f
	case "pareto":
		const alpha, xm = 1.5, 1.0 / 3 // mean alpha·xm/(alpha−1) = 1
		return (1 + cv*rng.NormFloat64()) * xm / math.Pow(1-rng.Float64(), 1/alpha)
	}
	return 1 + cv*rng.NormFloat64()
}

var scenarios = []scenario{
	{name: "A/A, no drift, CV 5%", effect: 1, cv: 0.05, rounds: 20, level: flat},
	{name: "A/A, linear 3x drift", effect: 1, cv: 0.05, rounds: 20, level: func(f float64) float64 { return 1 + 2*f }},
	{name: "A/A, step change halfway", effect: 1, cv: 0.05, rounds: 20, level: func(f float64) float64 {
		if f < 0.5 {
			return 1
		}
		return 1.5
	}},
	{name: "A/A, first run 2x", effect: 1, cv: 0.05, rounds: 20, level: flat, firstRunFactor: 2},
	{name: "A/A, 5% of runs 3x slower", effect: 1, cv: 0.05, rounds: 20, level: flat, outliers: 0.05},
	{name: "10% effect, CV 5%", effect: 1.10, cv: 0.05, rounds: 20, level: flat},
	{name: "10% effect, CV 5%, 5% of runs 3x slower", effect: 1.10, cv: 0.05, rounds: 20, level: flat, outliers: 0.05},
	{name: "10% effect, CV 5%, 3x drift", effect: 1.10, cv: 0.05, rounds: 20, level: func(f float64) float64 { return 1 + 2*f }},
}

func flat(float64) float64 { return 1 }

// lastVariant holds the variant's values of the last trial, in run order.
var lastVariant []float64

// run simulates an experiment's runs in schedule order, handing each
// measured one to each with the cell it belongs to; each returns false to
// stop.
func run(s scenario, entries []lab.Entry, seed uint64, each func(cell int, o stats.Obs) bool) {
	rng := rand.New(rand.NewPCG(seed, 99))
	variantRuns := 0
	for i, e := range entries {
		cv := s.cv
		if e.Cell == 1 && s.variantCV > 0 {
			cv = s.variantCV
		}
		v := 100 * s.level(float64(i)/float64(len(entries)-1)) * noiseFactor(s, cv, rng)
		if e.Cell == 1 {
			v *= s.effect
			if s.warmupTau > 0 {
				v *= 1 + math.Exp(-float64(variantRuns)/s.warmupTau)
			}
			variantRuns++
		}
		if i == 0 && s.firstRunFactor > 0 {
			v *= s.firstRunFactor
		}
		if s.outliers > 0 && rng.Float64() < s.outliers {
			v *= 3
		}
		if !e.Warmup && !each(e.Cell, stats.Obs{Round: e.Round, Slot: e.Slot, Value: v}) {
			return
		}
	}
}

// trial simulates one experiment and returns the comparison of b with a.
func trial(s scenario, order string, seed uint64) stats.Comparison {
	var a, b []stats.Obs
	run(s, lab.Schedule(order, 2, s.warmup, s.rounds, seed), seed, func(cell int, o stats.Obs) bool {
		if cell == 0 {
			a = append(a, o)
		} else {
			b = append(b, o)
		}
		return true
	})
	lastVariant = lastVariant[:0]
	for _, o := range b {
		lastVariant = append(lastVariant, o.Value)
	}
	var w stats.Warmup
	if !s.noCheck {
		a, b, w = stats.CheckWarmup(a, b, false)
	}
	c := stats.Compare(a, b, stats.Metric{LowerIsBetter: true}, 0.02)
	c.Kept(w)
	stats.Finish([]*stats.Comparison{&c}, 0.02)
	c.ApplyWarmup(w, false)
	return c
}

// sections are the tables, in the order they print.
var sections = []struct {
	name  string
	table func(trials int)
}{{"drift", drift}, {"mde", mdePromise}, {"rounds", roundsPromise}, {"warmup", warmup}, {"sequential", sequential}, {"history", historyTable}, {"noise", noiseShapes}}

func main() {
	trials := flag.Int("trials", 2000, "simulated experiments per scenario and order")
	only := flag.String("only", "", "print only these tables, comma-separated: drift, mde, rounds, warmup, sequential, history, noise")
	flag.Parse()
	fmt.Printf("%d trials each; threshold 2%%; a time metric (b slower = ratio > 1)\n", *trials)
	for _, sec := range sections {
		if *only == "" || slices.Contains(strings.Split(*only, ","), sec.name) {
			fmt.Println()
			sec.table(*trials)
		}
	}
}

// drift is A/A and known effects under the ways targets misbehave, in
// random and in sequential order.
func drift(trials int) {
	fmt.Println("| scenario | rounds | order | 95% CI misses the true ratio | false faster/slower | power (correct 'slower') |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, s := range scenarios {
		for _, order := range []string{lab.OrderRandom, lab.OrderSequential} {
			wrong, right, missed := 0, 0, 0
			for i := 0; i < trials; i++ {
				c := trial(s, order, uint64(i)+1)
				if c.CI95[0] > s.effect || c.CI95[1] < s.effect {
					missed++
				}
				v := c.Verdict
				switch {
				case s.effect == 1 && (v == stats.Faster || v == stats.Slower):
					wrong++
				case s.effect > 1 && v == stats.Slower:
					right++
				case s.effect > 1 && v == stats.Faster:
					wrong++
				}
			}
			power := "—"
			if s.effect > 1 {
				power = rate(right, trials)
			}
			fmt.Printf("| %s | %d | %s | %s | %s | %s |\n", s.name, s.rounds, order, rate(missed, trials), rate(wrong, trials), power)
		}
	}
}

// mdePromise checks the MDE an experiment prints: a new experiment whose
// true effect is that MDE should say "slower" 80% of the time.
func mdePromise(trials int) {
	fmt.Println("| noise | rounds | power at the printed MDE (promised 80%) | median printed MDE | pilots judged by Hodges–Lehmann |")
	fmt.Println("|---|---|---|---|---|")
	for _, p := range []struct {
		name     string
		cv       float64
		rounds   int
		outliers float64
		vcv      float64
	}{{"CV 5%", 0.05, 20, 0, 0}, {"CV 15%", 0.15, 12, 0, 0}, {"CV 5%", 0.05, 6, 0, 0}, {"CV 30%", 0.30, 12, 0, 0},
		{"CV 5%, 5% of runs 3x slower", 0.05, 20, 0.05, 0}, {"CV 5%, 5% of runs 3x slower", 0.05, 12, 0.05, 0},
		{"CV 5% baseline, 15% variant", 0.05, 12, 0, 0.15}} {
		hit, robust := 0, 0
		var mdes []float64
		for i := 0; i < trials; i++ {
			s := scenario{effect: 1, cv: p.cv, rounds: p.rounds, level: flat, outliers: p.outliers, variantCV: p.vcv}
			pilot := trial(s, lab.OrderRandom, uint64(i)+1)
			if pilot.Robust {
				robust++
			}
			mdes = append(mdes, pilot.MDE)
			s.effect = 1 + pilot.MDE
			if c := trial(s, lab.OrderRandom, uint64(i)+1_000_000); c.Verdict == stats.Slower {
				hit++
			}
		}
		fmt.Printf("| %s | %d | %s | %.1f%% | %s |\n", p.name, p.rounds, rate(hit, trials), 100*median(mdes), rate(robust, trials))
	}
}

// roundsPromise checks the rounds an inconclusive experiment names: a new
// experiment of that many rounds, with the same true effect, should reach
// a verdict 80% of the time.
func roundsPromise(trials int) {
	fmt.Println("| true effect | noise | pilot rounds | inconclusive pilots that named a round count | decided at the rounds they named (promised 80%) | median rounds named |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, p := range []struct {
		effect, cv float64
		rounds     int
	}{{1.05, 0.10, 6}, {1.10, 0.20, 6}, {1.00, 0.05, 6}, {1.03, 0.05, 12}} {
		asked, decided := 0, 0
		var named []float64
		for i := 0; i < trials; i++ {
			pilot := trial(scenario{effect: p.effect, cv: p.cv, rounds: p.rounds, level: flat}, lab.OrderRandom, uint64(i)+1)
			if pilot.Verdict != stats.Inconclusive || pilot.RoundsNeeded <= 0 || pilot.RoundsNeeded > 2000 {
				continue
			}
			asked++
			named = append(named, float64(pilot.RoundsNeeded))
			c := trial(scenario{effect: p.effect, cv: p.cv, rounds: pilot.RoundsNeeded, level: flat}, lab.OrderRandom, uint64(i)+1_000_000)
			if c.Verdict != stats.Inconclusive {
				decided++
			}
		}
		fmt.Printf("| %+.0f%% | CV %.0f%% | %d | %d of %d | %s | %.0f |\n", 100*(p.effect-1), 100*p.cv, p.rounds, asked, trials, rate(decided, max(asked, 1)), median(named))
	}
}

// warmup checks a variant that warms up on its own, 1+e^(-k/tau) slower
// on its k-th run: fixed rounds and stopping when decided, without the
// warm-up check (as iolab judged before it) and with it; and what the
// check costs when nothing warms up.
func warmup(trials int) {
	fmt.Println("| A/A, the variant alone 1+e^(-k/τ) slower on its k-th run, 1 warm-up round, CV 5% | τ | rounds | warm-up check | false faster/slower (promised ≤ 5%) | verdict withheld: still warming up | mean rounds cut | mean rounds used |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, tau := range []float64{1, 2, 4} {
		for _, design := range []struct{ min, max int }{{0, 12}, {0, 20}, {6, 60}, {3, 100}} {
			for _, check := range []bool{false, true} {
				s := scenario{effect: 1, cv: 0.05, rounds: design.max, level: flat, warmup: 1, warmupTau: tau, noCheck: !check}
				wrong, withheld, cut, used := 0, 0, 0, 0
				for i := 0; i < trials; i++ {
					var c stats.Comparison
					if design.min > 0 {
						c = seqComparison(s, design.min, design.max, uint64(i)+1)
					} else {
						c = trial(s, lab.OrderRandom, uint64(i)+1)
					}
					if c.Verdict == stats.Faster || c.Verdict == stats.Slower {
						wrong++
					}
					if c.Withheld == stats.WithheldWarmingUp {
						withheld++
					}
					cut += c.WarmupCut
					used += c.N + c.WarmupCut
				}
				rounds := fmt.Sprint(design.max, " fixed")
				if design.min > 0 {
					rounds = fmt.Sprintf("{%d, %d} until decided", design.min, design.max)
				}
				fmt.Printf("| | %g | %s | %s | %s | %s | %.1f | %.1f |\n", tau, rounds, onOff(check), rate(wrong, trials), rate(withheld, trials),
					float64(cut)/float64(trials), float64(used)/float64(trials))
			}
		}
	}
	fmt.Println()
	fmt.Println("| the warm-up check, with nothing to leave out | rounds | 95% CI misses the true ratio | false faster/slower | power (correct 'slower') | rounds left out (mean) | withheld |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, s := range []scenario{scenarios[0], scenarios[1], scenarios[2], scenarios[4], scenarios[5], scenarios[6]} {
		for _, check := range []bool{false, true} {
			s.noCheck = !check
			missed, wrong, right, left, withheld := 0, 0, 0, 0, 0
			for i := 0; i < trials; i++ {
				c := trial(s, lab.OrderRandom, uint64(i)+1)
				if c.CI95[0] > s.effect || c.CI95[1] < s.effect {
					missed++
				}
				switch {
				case s.effect == 1 && (c.Verdict == stats.Faster || c.Verdict == stats.Slower), c.Verdict == stats.Faster:
					wrong++
				case s.effect > 1 && c.Verdict == stats.Slower:
					right++
				}
				if c.Withheld != "" {
					withheld++
				}
				left += c.WarmupCut
			}
			power := "—"
			if s.effect > 1 {
				power = rate(right, trials)
			}
			fmt.Printf("| %s, check %s | %d | %s | %s | %s | %.2f | %s |\n", s.name, onOff(check), s.rounds, rate(missed, trials), rate(wrong, trials), power,
				float64(left)/float64(trials), rate(withheld, trials))
		}
	}
}

// familyTrial simulates one experiment of s.variants variants and a
// baseline, in random order, each variant judged against the baseline
// as the report judges them (the warm-up check, a family of them under
// Holm): it says whether any verdict was drawn, and how many intervals
// missed the true ratio 1 (A/A: nothing differs).
func familyTrial(s scenario, seed uint64) (anyVerdict bool, missed int) {
	obs := make([][]stats.Obs, s.variants+1)
	run(scenario{cv: s.cv, level: flat, noise: s.noise, effect: 1}, lab.Schedule(lab.OrderRandom, s.variants+1, 0, s.rounds, seed), seed,
		func(cell int, o stats.Obs) bool { obs[cell] = append(obs[cell], o); return true })
	cs := make([]stats.Comparison, s.variants)
	ws := make([]stats.Warmup, s.variants)
	family := make([]*stats.Comparison, s.variants)
	for v := range s.variants {
		a, b := obs[0], obs[v+1]
		if !s.noCheck {
			a, b, ws[v] = stats.CheckWarmup(a, b, false)
		}
		cs[v] = stats.Compare(a, b, stats.Metric{LowerIsBetter: true}, 0.02)
		cs[v].Kept(ws[v])
		family[v] = &cs[v]
	}
	stats.Finish(family, 0.02)
	for v := range cs {
		cs[v].ApplyWarmup(ws[v], false)
		if cs[v].Verdict == stats.Faster || cs[v].Verdict == stats.Slower {
			anyVerdict = true
		}
		if cs[v].CI95[0] > 1 || cs[v].CI95[1] < 1 {
			missed++
		}
	}
	return anyVerdict, missed
}

// noiseShapes is the warm-up check's cost in A/A under noise of other
// shapes than normal, and in a family of five variants.
func noiseShapes(trials int) {
	fmt.Println("| A/A, the warm-up check on noise of other shapes | rounds | variants | warm-up check | 95% CI misses the true ratio | experiments with a false faster/slower |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, s := range []scenario{
		{name: "lognormal, CV 5%", noise: "lognormal", cv: 0.05, rounds: 12, variants: 1},
		{name: "lognormal, CV 30%", noise: "lognormal", cv: 0.30, rounds: 12, variants: 1},
		{name: "bimodal (half the runs 2x), CV 5%", noise: "bimodal", cv: 0.05, rounds: 12, variants: 1},
		{name: "Pareto α 1.5, CV 5%", noise: "pareto", cv: 0.05, rounds: 12, variants: 1},
		{name: "normal, CV 30%", cv: 0.30, rounds: 12, variants: 5},
		{name: "lognormal, CV 30%", noise: "lognormal", cv: 0.30, rounds: 12, variants: 5},
	} {
		for _, check := range []bool{false, true} {
			s.noCheck = !check
			decided, missed := 0, 0
			for i := range trials {
				d, m := familyTrial(s, uint64(i)+1)
				if d {
					decided++
				}
				missed += m
			}
			fmt.Printf("| %s | %d | %d | %s | %s | %s |\n", s.name, s.rounds, s.variants, onOff(check), rate(missed, trials*s.variants), rate(decided, trials))
		}
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// trialValues is trial in random order, with the variant's measured
// values in run order.
func trialValues(s scenario, seed uint64) (stats.Comparison, []float64) {
	c := trial(s, lab.OrderRandom, seed)
	return c, lastVariant
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// rate prints a proportion with its Monte-Carlo standard error.
func rate(k, n int) string {
	p := float64(k) / float64(n)
	return fmt.Sprintf("%.1f%% ± %.1f%%", 100*p, 100*math.Sqrt(p*(1-p)/float64(n)))
}

// seqTrial runs an experiment that stops when decided: a look after every
// round from min on, at most max rounds. It returns the verdict and the
// rounds it used.
func seqTrial(s scenario, min, max int, seed uint64) (string, int) {
	c := seqComparison(s, min, max, seed)
	return c.Verdict, c.N + c.WarmupCut
}

// seqComparison is seqTrial's last look.
func seqComparison(s scenario, min, max int, seed uint64) stats.Comparison {
	seq := stats.NewSequential(0.02, min, max, 1)
	var a, b []stats.Obs
	var last stats.Comparison
	run(s, lab.Schedule(lab.OrderRandom, 2, s.warmup, max, seed), seed, func(cell int, o stats.Obs) bool {
		if cell == 0 {
			a = append(a, o)
		} else {
			b = append(b, o)
		}
		if len(a) == len(b) && len(a) >= min {
			ca, cb, w := a, b, stats.Warmup{}
			if !s.noCheck {
				ca, cb, w = stats.CheckWarmup(a, b, true)
			}
			c := seq.Compare(ca, cb, stats.Metric{LowerIsBetter: true})
			c.ApplyWarmup(w, true)
			if last = c; c.Verdict != stats.Inconclusive || len(a) == max {
				return false
			}
		}
		return true
	})
	return last
}

// sequential checks stopping when decided: false verdicts in A/A under
// drift, though the rounds are looked at after each one; and, with a real
// effect, the rounds it uses against the fixed number of rounds that has
// the same power.
func sequential(trials int) {
	fmt.Println("| stop when decided, rounds {min 6, max 60}, CV 5% | false faster/slower | decided | mean rounds used |")
	fmt.Println("|---|---|---|---|")
	sawtooth := func(f float64) float64 { return 1 + 0.5*math.Mod(4*f, 1) }
	for _, s := range []scenario{scenarios[0], scenarios[1], scenarios[2],
		{name: "A/A, sawtooth 1.5x, 4 teeth", effect: 1, cv: 0.05, level: sawtooth},
		{name: "A/A, no drift, CV 20%", effect: 1, cv: 0.20, level: flat},
		{name: "A/A, 5% of runs 3x slower", effect: 1, cv: 0.05, level: flat, outliers: 0.05}} {
		wrong, decided, used := 0, 0, 0
		for i := 0; i < trials; i++ {
			v, n := seqTrial(s, 6, 60, uint64(i)+1)
			used += n
			if v == stats.Faster || v == stats.Slower {
				wrong++
			}
			if v != stats.Inconclusive {
				decided++
			}
		}
		fmt.Printf("| %s | %s | %s | %.1f |\n", s.name, rate(wrong, trials), rate(decided, trials), float64(used)/float64(trials))
	}
	fmt.Println()
	fmt.Println("| true effect, rounds {min 6, max 60} | noise | power of stopping when decided | its mean rounds | fixed rounds of at least that power (at most 95%) | their power (at 60 when more) |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, p := range []struct {
		effect, cv, outliers float64
	}{{1.05, 0.05, 0}, {1.10, 0.05, 0}, {1.20, 0.05, 0}, {1.10, 0.15, 0}, {1.20, 0.15, 0}, {1.20, 0.30, 0}, {1.40, 0.30, 0},
		{1.10, 0.05, 0.05}, {1.20, 0.05, 0.05}} {
		s := scenario{effect: p.effect, cv: p.cv, level: flat, outliers: p.outliers}
		right, used := 0, 0
		for i := 0; i < trials; i++ {
			v, n := seqTrial(s, 6, 60, uint64(i)+1)
			used += n
			if v == stats.Slower {
				right++
			}
		}
		// Equal power, but at most 95%: the warm-up check withholds 3–5%
		// of verdicts on noise alone however many rounds there are, so no
		// fixed design with it reaches 99% (the sequence looks again until
		// it decides).
		power := math.Min(float64(right)/float64(trials), 0.95)
		// The fewest fixed rounds whose power reaches the sequence's, by
		// bisection (power grows with rounds).
		fixedPower := func(n int) int {
			s.rounds = n
			k := 0
			for i := 0; i < trials; i++ {
				if trial(s, lab.OrderRandom, uint64(i)+5_000_000).Verdict == stats.Slower {
					k++
				}
			}
			return k
		}
		fixed, fixedRight := 0, 0
		if k := fixedPower(60); float64(k)/float64(trials) < power {
			fixedRight = k // what 60 fixed rounds reach
		} else {
			lo, hi := 2, 60 // power(lo) < power <= power(hi)
			fixed, fixedRight = hi, k
			for hi-lo > 1 {
				mid := (lo + hi) / 2
				if k := fixedPower(mid); float64(k)/float64(trials) >= power {
					hi, fixed, fixedRight = mid, mid, k
				} else {
					lo = mid
				}
			}
		}
		fixedText := "more than 60"
		if fixed > 0 {
			fixedText = fmt.Sprint(fixed)
		}
		noise := fmt.Sprintf("CV %.0f%%", 100*p.cv)
		if p.outliers > 0 {
			noise += fmt.Sprintf(", %.0f%% of runs 3x slower", 100*p.outliers)
		}
		fmt.Printf("| %+.0f%% | %s | %s | %.1f | %s | %s |\n", 100*(p.effect-1), noise, rate(right, trials), float64(used)/float64(trials), fixedText, rate(fixedRight, trials))
	}
}
