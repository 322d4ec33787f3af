package history

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/stats"
)

// lognormal is n values about level with relative noise cv.
func lognormal(rng *rand.Rand, level, cv float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = level * math.Exp(cv*rng.NormFloat64())
	}
	return out
}

// series makes a history of one median per experiment (3 runs each).
func series(levels []float64, cv float64, seed uint64) []Point {
	rng := rand.New(rand.NewPCG(seed, 7))
	t0 := time.Date(2026, 1, 25, 0, 0, 0, 0, time.UTC)
	var pts []Point
	for i, l := range levels {
		pts = append(pts, Point{Experiment: string(rune('A' + i)), At: t0.Add(time.Duration(i) * time.Hour),
			Values: lognormal(rng, l, cv, 3), Facts: map[string]string{"kernel": "6.1"}})
	}
	return pts
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

var higher = stats.Metric{}

func TestChangePointFound(t *testing.T) {
	// The block-layer history: IOPS 1,143 for six experiments, then the
	// fix (6x), kept for six more.
	levels := append(repeat(1143, 6), repeat(6887, 6)...)
	a := Analyze(series(levels, 0.05, 1), higher, 0.02)
	if len(a.ChangePoints) != 1 {
		t.Fatalf("change points %+v, want one at index 6", a.ChangePoints)
	}
	cp := a.ChangePoints[0]
	if cp.Index != 6 || cp.Experiment != "G" || cp.P > Alpha || cp.Direction != "improvement" {
		t.Errorf("change point %+v, want index 6 (G), p <= 0.05, improvement", cp)
	}
	if cp.Ratio < 5 || cp.Ratio > 7 {
		t.Errorf("ratio %.2f, want about 6", cp.Ratio)
	}
	// For a latency the same rise is a regression.
	a = Analyze(series(levels, 0.05, 1), stats.Metric{LowerIsBetter: true}, 0.02)
	if len(a.ChangePoints) != 1 || a.ChangePoints[0].Direction != "regression" {
		t.Errorf("latency rise: %+v, want one regression", a.ChangePoints)
	}
}

func TestTwoChangePoints(t *testing.T) {
	levels := append(append(repeat(100, 8), repeat(200, 8)...), repeat(100, 8)...)
	a := Analyze(series(levels, 0.05, 2), higher, 0.02)
	if len(a.ChangePoints) != 2 || a.ChangePoints[0].Index != 8 || a.ChangePoints[1].Index != 16 {
		t.Fatalf("change points %+v, want at 8 and 16", a.ChangePoints)
	}
	if d := a.ChangePoints[0].Direction + "," + a.ChangePoints[1].Direction; d != "improvement,regression" {
		t.Errorf("directions %s", d)
	}
	if r := a.ChangePoints[1].Ratio; math.Abs(r-0.5) > 0.05 {
		t.Errorf("second ratio %.3f, want about 0.5 (its own neighbours, not the whole series)", r)
	}
}

// TestNoChangeFalseAlarms: histories with no change raise a change point
// in about 5% of them, as the level promises.
func TestNoChangeFalseAlarms(t *testing.T) {
	const trials = 200
	alarms := 0
	for s := range uint64(trials) {
		rng := rand.New(rand.NewPCG(100+s, 7))
		if len(EDivisive(lognormal(rng, 1000, 0.1, 12), Alpha, s)) > 0 {
			alarms++
		}
	}
	// Binomial(200, 0.05): mean 10, sd 3.1; 20 is 3 sd above.
	if alarms > 20 {
		t.Errorf("%d of %d histories without a change had a change point, want about 5%%", alarms, trials)
	}
	if alarms == 0 {
		t.Errorf("no false alarm in %d: the test is conservative far beyond its level", trials)
	}
}

func TestTooFewAndSmall(t *testing.T) {
	a := Analyze(series([]float64{100, 100, 300, 300}, 0.01, 3), higher, 0.02)
	if len(a.ChangePoints) != 0 || a.Reason == "" {
		t.Errorf("4 experiments: %+v, reason %q; want none and a reason", a.ChangePoints, a.Reason)
	}
	// The step against the previous experiment still says it.
	if p := a.Steps[2].Previous; p == nil || p.Verdict != "faster" {
		t.Errorf("step 2 against 1: %+v, want faster", p)
	}
	// A change within the threshold is found but called none.
	levels := append(repeat(1000, 8), repeat(1010, 8)...)
	a = Analyze(series(levels, 0.0005, 4), higher, 0.02)
	if len(a.ChangePoints) != 1 || a.ChangePoints[0].Direction != "none" {
		t.Errorf("1%% change at 0.05%% noise: %+v, want one change of direction none", a.ChangePoints)
	}
}

func TestChanges(t *testing.T) {
	pts := series([]float64{1, 1, 1}, 0.01, 5)
	pts[1].Facts = map[string]string{"kernel": "6.2", "commit": "abc"}
	pts[2].Facts = map[string]string{"kernel": "6.2"}
	a := Analyze(pts, higher, 0.02)
	if len(a.Steps[0].Changes) != 0 {
		t.Errorf("first step changes %+v", a.Steps[0].Changes)
	}
	want := []Change{{Fact: "commit", To: "abc"}, {Fact: "kernel", From: "6.1", To: "6.2"}}
	if got := a.Steps[1].Changes; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("step 1 changes %+v, want %+v", got, want)
	}
	if got := a.Steps[2].Changes; len(got) != 1 || got[0] != (Change{Fact: "commit", From: "abc"}) {
		t.Errorf("step 2 changes %+v, want the commit gone", got)
	}
}

// TestExactP: with few experiments every permutation is tried, so a clean
// change of 3 experiments after 5 has p = 2/C(8,3) exactly, whatever the
// seed: only it and its mirror image split the values as well.
func TestExactP(t *testing.T) {
	x := []float64{1, 1.1, 0.9, 1.05, 0.95, 3, 3.1, 2.9}
	for _, seed := range []uint64{1, 2, 3} {
		cps := EDivisive(x, Alpha, seed)
		if len(cps) != 1 || cps[0].Index != 5 || math.Abs(cps[0].P-2.0/56) > 1e-12 {
			t.Errorf("seed %d: %+v, want one change at 5 with p = 2/56", seed, cps)
		}
	}
	// Seven experiments cannot reach 0.05.
	if cps := EDivisive(x[1:], Alpha, 1); len(cps) != 0 {
		t.Errorf("7 experiments: %+v, want none (2/35 > 0.05)", cps)
	}
}

func TestSameAnswerEveryTime(t *testing.T) {
	levels := append(repeat(100, 5), repeat(130, 4)...)
	a, b := Analyze(series(levels, 0.08, 6), higher, 0.02), Analyze(series(levels, 0.08, 6), higher, 0.02)
	if len(a.ChangePoints) != len(b.ChangePoints) {
		t.Fatalf("%+v then %+v", a.ChangePoints, b.ChangePoints)
	}
	for i := range a.ChangePoints {
		if a.ChangePoints[i] != b.ChangePoints[i] {
			t.Errorf("%+v then %+v", a.ChangePoints[i], b.ChangePoints[i])
		}
	}
}

// A step far above the noise is located exactly; one near it, within a
// range that holds the true step (95%), which narrows as the step grows.
func TestLocate(t *testing.T) {
	t.Parallel()
	step := func(rng *rand.Rand, size float64) []float64 {
		x := make([]float64, 16)
		for i := range x {
			x[i] = 0.05 * rng.NormFloat64()
			if i >= 8 {
				x[i] += math.Log(size)
			}
		}
		return x
	}
	rng := rand.New(rand.NewPCG(1, 2))
	if l := Locate(step(rng, 3), 0, 8, 16, 1); l != [2]int{8, 8} {
		t.Errorf("a 3x step at 8 located at %v, want exactly 8", l)
	}
	inside, wide, trials := 0, 0, 200
	for i := range trials {
		x := step(rng, 1.10)
		l := Locate(x, 0, 8, 16, uint64(i))
		if l[0] <= 8 && 8 <= l[1] {
			inside++
		}
		if l[1] > l[0] {
			wide++
		}
	}
	if inside < trials*9/10 || wide < trials/2 {
		t.Errorf("a 10%% step in 5%% noise: the range held it %d of %d times, and was wider than one experiment %d times", inside, trials, wide)
	}
}
