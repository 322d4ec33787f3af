package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// rounds makes n rounds of a baseline and a variant with a given true ratio,
// multiplicative noise cv, a drift of the target over rounds (factor from
// first to last round), a penalty per slot within a round, and a random
// order within each round.
func rounds(n int, ratio, cv, drift, slotPenalty float64, seed uint64) (base, variant []Obs) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for r := 0; r < n; r++ {
		level := 100 * math.Pow(drift, float64(r)/float64(max(n-1, 1)))
		slots := rng.Perm(2)
		value := func(slot int, f float64) float64 {
			return level * f * (1 - slotPenalty*float64(slot)) * (1 + cv*rng.NormFloat64())
		}
		base = append(base, Obs{Round: r, Slot: slots[0], Value: value(slots[0], 1)})
		variant = append(variant, Obs{Round: r, Slot: slots[1], Value: value(slots[1], ratio)})
	}
	return base, variant
}

func TestCompareFindsARealDifference(t *testing.T) {
	t.Parallel()
	base, variant := rounds(12, 1.10, 0.02, 1, 0, 1)
	c := Compare(base, variant, false, 0.02)
	if c.Method != "paired" || c.N != 12 || c.Ratio < 1.07 || c.Ratio > 1.13 || c.CI95[0] > 1.10 || c.CI95[1] < 1.10 {
		t.Fatalf("%+v", c)
	}
	if c.Verdict != Faster {
		t.Fatalf("verdict %s for a 10%% higher throughput", c.Verdict)
	}
	// The same numbers as times: higher is slower.
	if c := Compare(base, variant, true, 0.02); c.Verdict != Slower {
		t.Fatalf("verdict %s for a 10%% longer time", c.Verdict)
	}
}

func TestCompareIsNotFooledByDrift(t *testing.T) {
	t.Parallel()
	// A/A: the target slows 3x over the experiment and each round's second
	// run pays 5%; randomized order and pairing per round cancel both.
	falseVerdicts := 0
	for seed := uint64(0); seed < 40; seed++ {
		base, variant := rounds(20, 1, 0.03, 1.0/3, 0.05, seed)
		c := Compare(base, variant, false, 0.02)
		if c.Verdict == Faster || c.Verdict == Slower {
			falseVerdicts++
		}
		if seed == 0 && (c.SlotEffect > -0.03 || c.SlotEffect < -0.07) {
			t.Errorf("slot effect %.3f, want about -0.05", c.SlotEffect)
		}
	}
	if falseVerdicts > 4 { // 5% of 40 is 2; allow sampling error
		t.Fatalf("%d false verdicts in 40 A/A experiments under drift", falseVerdicts)
	}
}

func TestCompareSaysSameWhenPrecise(t *testing.T) {
	t.Parallel()
	base, variant := rounds(20, 1.0, 0.005, 1, 0, 3)
	if c := Compare(base, variant, false, 0.02); c.Verdict != Same || c.RoundsNeeded != 0 {
		t.Fatalf("%+v", c)
	}
}

func TestCompareNoisyIsInconclusiveAndSaysHowManyRounds(t *testing.T) {
	t.Parallel()
	inconclusive := 0
	for seed := uint64(0); seed < 40; seed++ {
		base, variant := rounds(6, 1.0, 0.20, 1, 0, seed)
		c := Compare(base, variant, false, 0.02)
		if c.Verdict == Inconclusive {
			inconclusive++
		}
		if c.MDE < 0.05 || c.RoundsNeeded <= 6 {
			t.Fatalf("seed %d: 20%% noise in 6 rounds gives MDE %.3f and asks for %d rounds", seed, c.MDE, c.RoundsNeeded)
		}
	}
	if inconclusive < 36 {
		t.Fatalf("only %d of 40 noisy A/A comparisons inconclusive", inconclusive)
	}
}

func TestCompareUnpairedFallback(t *testing.T) {
	t.Parallel()
	var base, variant []Obs
	for i := 0; i < 8; i++ {
		base = append(base, Obs{Round: i, Value: 100 + float64(i)})
		variant = append(variant, Obs{Round: 100 + i, Value: 150 + float64(i)}) // no common rounds
	}
	c := Compare(base, variant, false, 0.02)
	if c.Method != "unpaired" || math.Abs(c.Ratio-153.5/103.5) > 1e-9 || c.P > 0.01 || c.Verdict != Faster {
		t.Fatalf("%+v", c)
	}
}

func TestHolm(t *testing.T) {
	t.Parallel()
	cs := []*Comparison{{P: 0.01}, {P: 0.04}, {P: 0.03}}
	Finish(cs, 0.02)
	want := []float64{0.03, 0.06, 0.06}
	for i, c := range cs {
		if math.Abs(c.PAdjusted-want[i]) > 1e-12 {
			t.Errorf("p %.2f adjusted to %.3f, want %.3f", c.P, c.PAdjusted, want[i])
		}
	}
}

func TestRoundsNeeded(t *testing.T) {
	t.Parallel()
	if got := roundsNeeded(0.04, 0.02, 10); got != 40 {
		t.Fatalf("rounds needed %d, want 40", got)
	}
	if got := roundsNeeded(0.01, 0.02, 10); got != 0 {
		t.Fatalf("rounds needed %d, want 0", got)
	}
}

func TestLowerIsBetter(t *testing.T) {
	t.Parallel()
	for m, want := range map[string]bool{"wall_s": true, "read.lat_p99_ns": true, "ops_per_s": false,
		"bytes_per_s": false, "max_rss_bytes": true, "items_per_s": false} {
		if LowerIsBetter(m) != want {
			t.Errorf("LowerIsBetter(%s) != %v", m, want)
		}
	}
}
