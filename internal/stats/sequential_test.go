package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// seqTrial looks after every round, from 6 to 60, and stops when decided.
func seqTrial(s Sequential, effect, cv, drift float64, seed uint64) Comparison {
	rng := rand.New(rand.NewPCG(seed, 7))
	var a, b []Obs
	var l Comparison
	for r := 0; r < s.Max; r++ {
		level := 100 * (1 + (drift-1)*float64(r)/float64(s.Max-1))
		a = append(a, Obs{Round: r, Value: level * (1 + cv*rng.NormFloat64())})
		b = append(b, Obs{Round: r, Value: level * effect * (1 + cv*rng.NormFloat64())})
		if l = s.Compare(a, b, Metric{LowerIsBetter: true}); l.Verdict != Inconclusive {
			break
		}
	}
	return l
}

// Looking after every round and stopping at the first verdict keeps false
// verdicts under 5% (a fixed interval looked at this way would not), also
// while the target slows 3x; a real 10% difference is found in a few
// rounds.
func TestSequentialStopsWhenDecided(t *testing.T) {
	t.Parallel()
	// Threshold 0, the hardest case for false verdicts: any difference
	// counts.
	wrong := 0
	for seed := uint64(0); seed < 300; seed++ {
		if v := seqTrial(NewSequential(0, 6, 60, 1), 1, 0.05, 3, seed).Verdict; v == Faster || v == Slower {
			wrong++
		}
	}
	if wrong > 15 {
		t.Errorf("%d false verdicts in 300 A/A experiments looked at every round", wrong)
	}
	s := NewSequential(0.02, 6, 60, 1)
	rounds := 0
	for seed := uint64(0); seed < 100; seed++ {
		l := seqTrial(s, 1.10, 0.05, 1, seed)
		if l.Verdict != Slower {
			t.Fatalf("seed %d: a 10%% longer time judged %s after %d rounds", seed, l.Verdict, l.N)
		}
		rounds += l.N
	}
	if rounds > 100*20 {
		t.Errorf("%.1f rounds on average to find a 10%% difference at 5%% noise", float64(rounds)/100)
	}
	// A fixed 95% t-interval, looked at the same way, is fooled.
	fooled := 0
	for seed := uint64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var d []float64
		for r := 0; r < 60; r++ {
			d = append(d, math.Log((1+0.05*rng.NormFloat64())/(1+0.05*rng.NormFloat64())))
			if r < 5 {
				continue
			}
			m, ss := mean(d), 0.0
			for _, x := range d {
				ss += (x - m) * (x - m)
			}
			half := tDist(float64(len(d)-1)).Quantile(0.975) * math.Sqrt(ss/float64(len(d)-1)/float64(len(d)))
			if math.Abs(m) > half {
				fooled++
				break
			}
		}
	}
	t.Logf("A/A, peeking every round from 6 to 60: %d of 300 false verdicts with the sequence, %d with a fixed interval", wrong, fooled)
	if fooled < 30 || fooled <= 2*wrong {
		t.Errorf("peeking at the fixed interval: %d false verdicts, the sequence %d; the test shows nothing", fooled, wrong)
	}
}

// CheckWarmup leaves out the rounds in which one side was still warming
// up, leaves a steady series whole, holds a comparison that has not
// settled, and cannot tell anything from fewer than MinWarmupPairs rounds.
func TestCheckWarmup(t *testing.T) {
	t.Parallel()
	series := func(seed uint64, n int, factor func(r int) float64) (a, b []Obs) {
		rng := rand.New(rand.NewPCG(seed, 3))
		for r := range n {
			a = append(a, Obs{Round: r, Value: 100 * (1 + 0.05*rng.NormFloat64())})
			b = append(b, Obs{Round: r, Value: 100 * factor(r) * (1 + 0.05*rng.NormFloat64())})
		}
		return a, b
	}
	step := func(r int) float64 {
		if r < 3 {
			return 1.5
		}
		return 1
	}
	flat := func(int) float64 { return 1 }
	fixed := func(a, b []Obs) Warmup {
		_, _, w := CheckWarmup(a, b, false)
		return w
	}
	slow := func(r int) float64 { return 1 + math.Exp(-float64(r+1)/4) }
	cut, unsettled, held := 0, 0, 0
	for seed := range uint64(200) {
		a, b := series(seed, 20, step)
		a2, b2, w := CheckWarmup(a, b, false)
		if w.Cut < 3 || w.Cut > 10 || len(a2) != 20-w.Cut || len(b2) != 20-w.Cut || b2[0].Round != w.Cut || w.Side != 1 || w.Direction != 1 {
			t.Fatalf("seed %d: %+v, %d and %d kept", seed, w, len(a2), len(b2))
		}
		// The rounds after the step are noise, whose slope the test
		// sometimes takes for more settling.
		if w.Unsettled {
			held++
		}
		if w := fixed(series(seed, 20, flat)); w.Cut > 0 {
			cut++
		}
		// 1+e^(-k/4) is still 5% above the rest after 12 rounds: no
		// verdict can be drawn from them.
		if w := fixed(series(seed, 12, slow)); w.Unsettled {
			unsettled++
		}
	}
	if held > 20 {
		t.Errorf("a warm-up of 3 rounds held the comparison unsettled %d times in 200", held)
	}
	if cut > 30 {
		t.Errorf("a steady series was cut %d times in 200", cut)
	}
	if unsettled < 150 {
		t.Errorf("a slow warm-up over 12 rounds was held unsettled %d times in 200", unsettled)
	}
	a, b := series(1, 5, step)
	if _, _, w := CheckWarmup(a, b, true); !w.Unchecked || w.Cut != 0 {
		t.Errorf("5 rounds: %+v", w)
	}
	// A look keeps nothing that leans the way a warm-up pushes: here the
	// variant's ratio still falls steadily after the cut.
	lean := func(r int) float64 { return 1.3 - 0.02*float64(r) }
	leaning, looked := 0, 0
	for seed := range uint64(100) {
		a, b := series(seed, 10, lean)
		if w := fixed(a, b); w.Unsettled {
			leaning++
		}
		if _, _, w := CheckWarmup(a, b, true); w.Unsettled {
			if looked++; w.Direction != 1 {
				t.Fatalf("seed %d: %+v", seed, w)
			}
		}
	}
	if looked < 60 || looked <= leaning+10 {
		t.Errorf("a series leaning 2%% a round: %d of 100 looks held it, and %d judgements of fixed rounds", looked, leaning)
	}
}

// The warm-up check withholds or cuts now and then with nothing warming
// up; a comparison that passed it prints the MDE and rounds of the rule
// with the check, which checkCost's shares must describe: here checked
// against CheckWarmup itself, run on series of noise through Obs.
func TestWarmupCheckCostsPower(t *testing.T) {
	t.Parallel()
	for _, n := range []int{6, 12, 20} {
		var total, withheld, cut, unsettled float64
		for _, o := range checkCost(n) {
			total += o.share
			if o.unsettled {
				unsettled += o.share
			}
			if o.unsettled && o.up {
				withheld += o.share
			}
			if o.kept < n {
				cut += o.share
			}
		}
		t.Logf("%d rounds of noise: cut or unsettled %.1f%%, unsettled %.1f%%, a verdict above zero withheld %.1f%%", n, 100*cut, 100*unsettled, 100*withheld)
		if math.Abs(total-1) > 1e-9 {
			t.Fatalf("%d rounds: shares sum to %g", n, total)
		}
		rng := rand.New(rand.NewPCG(uint64(n), 77))
		seen, seenCut := 0, 0
		const draws = 2000
		for range draws {
			var a, b []Obs
			for r := range n {
				a = append(a, Obs{Round: r, Value: 100 * math.Exp(0.05*rng.NormFloat64())})
				b = append(b, Obs{Round: r, Value: 100 * math.Exp(0.05*rng.NormFloat64())})
			}
			_, _, w := CheckWarmup(a, b, false)
			if w.Unsettled && w.Direction > 0 {
				seen++
			}
			if w.Cut > 0 || w.Unsettled {
				seenCut++
			}
		}
		// Two independent simulations of 2000: a few standard errors apart
		// at most.
		if d := math.Abs(withheld - float64(seen)/draws); d > 0.025 {
			t.Errorf("%d rounds: checkCost withholds %.3f, CheckWarmup %.3f", n, withheld, float64(seen)/draws)
		}
		if d := math.Abs(cut - float64(seenCut)/draws); d > 0.04 {
			t.Errorf("%d rounds: checkCost cuts %.3f, CheckWarmup %.3f", n, cut, float64(seenCut)/draws)
		}
	}
	// The MDE counts it: much at 6 rounds, where any cut leaves too few,
	// little at 40.
	for _, tc := range []struct {
		n        int
		min, max float64
	}{{6, 1.2, 3}, {40, 1.0, 1.15}} {
		base, variant := rounds(tc.n, 1, 0.05, 1, 0, 3)
		c := Compare(base, variant, rate, 0.02)
		Finish([]*Comparison{&c}, 0.02)
		before := c.MDE
		c.Checked(0)
		t.Logf("%d rounds: MDE %.4f unchecked, %.4f checked", tc.n, before, c.MDE)
		if f := c.MDE / before; f < tc.min || f > tc.max || c.WarmupCut != 0 {
			t.Errorf("%d rounds: MDE %.4f unchecked, %.4f checked (x%.2f, want %g–%g)", tc.n, before, c.MDE, f, tc.min, tc.max)
		}
		if p := c.MDEAt(tc.n, 1); math.Abs(p-c.MDE) > 1e-9 {
			t.Errorf("%d rounds: MDEAt its own rounds %.4f, MDE %.4f", tc.n, p, c.MDE)
		}
	}
}

// One run in twenty that stalled (3x) does not stop the sequence from
// deciding a 10% difference it decides without it, and is counted.
func TestSequentialHoldsAnOutlierRound(t *testing.T) {
	t.Parallel()
	s := NewSequential(0.02, 6, 60, 1)
	base, variant := rounds(20, 1.10, 0.05, 1, 0, 5)
	clean := s.Compare(base, variant, Metric{LowerIsBetter: true})
	variant[7].Value *= 3
	stalled := s.Compare(base, variant, Metric{LowerIsBetter: true})
	if clean.Verdict != Slower || stalled.Verdict != Slower || stalled.Outliers != 1 {
		t.Errorf("10%% slower: %s without the stall, %s with it (%d outlier rounds held)", clean.Verdict, stalled.Verdict, stalled.Outliers)
	}
	if w, w0 := stalled.CI95[1]/stalled.CI95[0], clean.CI95[1]/clean.CI95[0]; w > 1.3*w0 {
		t.Errorf("the stall widened the interval from %.3f to %.3f", w0, w)
	}
}

// A family's member keeps its share of the 5% at every look, from the
// first rounds on: a bisect step's test (one of 18, looked at from 6 to
// 150 rounds) says "differs" in an A/A no more often than 0.05/18. When
// the estimated deviation was widened by the t quantile at 97.5% instead
// of at the boundary's own tail, 0.97% did (3.5 times the share), most of
// them in the first rounds.
func TestSequentialFamilyKeepsItsShare(t *testing.T) {
	t.Parallel()
	const trials, family = 4000, 18
	s := NewSequential(0, 6, 150, family)
	wrong := 0
	for seed := range uint64(trials) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var d []float64
		for len(d) < s.Max {
			d = append(d, rng.NormFloat64())
			if len(d) < s.Min {
				continue
			}
			if _, lo, hi := s.Interval(d); lo > 0 || hi < 0 {
				wrong++
				break
			}
		}
	}
	t.Logf("A/A, one of %d, peeking every round from 6 to 150: %d of %d excluded no difference (%.2f%%, its share %.2f%%)", family, wrong, trials, 100*float64(wrong)/trials, 5.0/family)
	if share := 0.05 / family * trials; float64(wrong) > 1.5*share {
		t.Errorf("%d of %d A/A sequences excluded no difference, over 1.5 times the family's share (%.0f)", wrong, trials, share)
	}
}
