package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// A search over a system whose objective holds below 70% of flat out and
// fails above it — each run's metric/bound log-normal about exp(4·(share
// − 0.7)), 10% noise — ends with a bracket no wider than its precision,
// and of 400 searches hardly any (under 5%, the confidence asked) call a
// load above the crossing held or one below it failed. A run that failed
// fails its load; one added after the end changes nothing.
func TestSLOSearchBracketsTheCrossing(t *testing.T) {
	t.Parallel()
	wrong := 0
	const searches = 400
	for seed := range uint64(searches) {
		rng := rand.New(rand.NewPCG(seed, 1))
		s := NewSLOSearch(0.05, 3, 8, 8)
		s.Widens = seed%2 == 0 // today's walk, and the one before it
		for runs := 0; !s.Done(); runs++ {
			if runs > s.MaxTotalRuns() {
				t.Fatalf("seed %d: not done after %d runs", seed, runs)
			}
			s.Add(math.Exp(4*(s.Share()-0.7)+0.1*rng.NormFloat64()), true)
		}
		if s.Hi-s.Lo > 0.05*s.Hi+1e-12 && len(s.Steps) < s.MaxSteps {
			t.Fatalf("seed %d: bracket [%g, %g] wider than 5%% after %d steps", seed, s.Lo, s.Hi, len(s.Steps))
		}
		for _, st := range s.Steps {
			if (st.Verdict == Holds && st.Share > 0.7) || (st.Verdict == Fails && st.Share < 0.7) {
				wrong++
				break
			}
		}
	}
	if wrong > searches/20 {
		t.Errorf("%d of %d searches judged a load wrongly", wrong, searches)
	}
	s := NewSLOSearch(0.05, 3, 8, 8)
	s.Add(0.1, true)
	s.Add(0, false)
	if s.Steps[0].Verdict != Fails || !s.Steps[0].Failed || s.Hi != SLOTop/2 || s.Share() != SLOTop/4 {
		t.Fatalf("a failed run: %+v, next share %g", s.Steps, s.Share())
	}
	for !s.Done() {
		s.Add(10, true) // fails at every load
	}
	steps := len(s.Steps)
	s.Add(0.1, true)
	if s.Lo != 0 || len(s.Steps) != steps || s.Share() != 0 || steps != 8 {
		t.Fatalf("a search failing everywhere: lo %g, %d steps, share %g", s.Lo, len(s.Steps), s.Share())
	}
}

// A calibration that came out low (the objective holds up to 3x the
// flat-out rate it measured) does not cap the answer: every load holding,
// the search tries the top of its range and doubles it until a load
// fails, then brackets the crossing; a system that holds everywhere ends
// unbounded at SLOWidest, no load said to fail.
func TestSLOSearchWidensPastALowCalibration(t *testing.T) {
	t.Parallel()
	for _, truth := range []float64{3, 7} {
		s := NewSLOSearch(0.05, 3, 8, 10)
		s.Widens = true
		for runs := 0; !s.Done(); runs++ {
			if runs > s.MaxTotalRuns() {
				t.Fatalf("not done after %d runs", runs)
			}
			s.Add(math.Exp(4*(s.Share()-truth)/truth), true)
		}
		if !s.Bounded || s.Lo > truth || s.Hi < truth || s.Hi-s.Lo > 0.05*s.Hi+1e-12 {
			t.Errorf("truth %g: bracket [%g, %g] (bounded %v) after steps %+v", truth, s.Lo, s.Hi, s.Bounded, s.Steps)
		}
	}
	s := NewSLOSearch(0.05, 3, 8, 10)
	s.Widens = true
	for !s.Done() {
		s.Add(0.5, true)
	}
	if s.Bounded || s.Lo != SLOWidest || s.Top != SLOWidest {
		t.Errorf("holding everywhere: lo %g, top %g, bounded %v, steps %+v", s.Lo, s.Top, s.Bounded, s.Steps)
	}
	for _, st := range s.Steps {
		if st.Verdict != Holds {
			t.Errorf("a load of a system that holds everywhere: %+v", st)
		}
	}
}

// SNIA's rule: five rounds within 20% of their mean, their fitted line
// moving under 10% of it across them.
func TestPreconditionSteady(t *testing.T) {
	t.Parallel()
	p := DefaultPrecondition
	for _, c := range []struct {
		values []float64
		want   bool
	}{
		{[]float64{100, 100, 100, 100}, false},        // too few
		{[]float64{50, 100, 101, 99, 100, 102}, true}, // the last five
		{[]float64{100, 92, 108, 100, 100}, true},     // a range of 16%
		{[]float64{100, 89, 111, 100, 100}, false},    // 22%
		{[]float64{95, 97, 99, 101, 103}, true},       // the line moves 8%, under 10%
		{[]float64{90, 95, 100, 105, 110}, false},     // the line moves 20%
	} {
		if got := p.Steady(c.values); got != c.want {
			t.Errorf("%v: steady %v, want %v", c.values, got, c.want)
		}
	}
}
