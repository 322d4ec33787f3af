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

// SkipWarmup leaves out the rounds in which one side was still warming
// up, and leaves a steady series whole.
func TestSkipWarmup(t *testing.T) {
	t.Parallel()
	series := func(seed uint64, warm int) (a, b []Obs) {
		rng := rand.New(rand.NewPCG(seed, 3))
		for r := range 20 {
			v := 100 * (1 + 0.05*rng.NormFloat64())
			if r < warm {
				v *= 1.5
			}
			a = append(a, Obs{Round: r, Value: 100 * (1 + 0.05*rng.NormFloat64())})
			b = append(b, Obs{Round: r, Value: v})
		}
		return a, b
	}
	cut := 0
	for seed := range uint64(200) {
		a, b := series(seed, 3)
		a2, b2, k := SkipWarmup(a, b)
		if k < 3 || k > 6 || len(a2) != 20-k || len(b2) != 20-k || b2[0].Round != k {
			t.Fatalf("seed %d: %d rounds left out, %d and %d kept", seed, k, len(a2), len(b2))
		}
		if a, b = series(seed, 0); len(a) > 0 {
			if _, _, k := SkipWarmup(a, b); k > 0 {
				cut++
			}
		}
	}
	if cut > 20 {
		t.Errorf("a steady series was cut %d times in 200", cut)
	}
}
