package bisect

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/iolab/iolab/internal/stats"
)

func commits(n int) []Commit {
	out := make([]Commit, n)
	for i := range out {
		out[i] = Commit{Hash: fmt.Sprintf("%040d", i), Subject: fmt.Sprintf("commit %d", i)}
	}
	return out
}

// est is an estimate of a log ratio with an interval of ±w.
func est(log, w float64) Estimate { return Estimate{Log: log, Lo: log - w, Hi: log + w} }

// run bisects commits whose cost, on the log scale, is cost(i), each step
// judged from the three comparisons a step's rounds would give, with
// intervals of ±w; broken commits do not build.
func run(t *testing.T, n int, cost func(int) float64, w float64, broken map[int]bool) *Search {
	t.Helper()
	s, err := New(commits(n))
	if err != nil {
		t.Fatal(err)
	}
	for steps := 0; !s.Done(); steps++ {
		if steps > 2*n {
			t.Fatalf("no end after %d steps: %+v", steps, s.Steps())
		}
		lo, mid, hi, _ := s.Next()
		st := Step{Low: lo, Mid: mid, High: hi, Runs: 30}
		if broken[mid] {
			st.Verdict = Unbuildable
		} else {
			l, m, h := cost(lo), cost(mid), cost(hi)
			st.Verdict, st.Position = Judge(Measure{VsLow: est(m-l, w), ToHigh: est(h-m, w), Whole: est(h-l, w), Centre: est(m-(l+h)/2, w)})
		}
		if err := s.Record(st); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// One +15% change at commit 41 of 64: found alone, with all of the change,
// in about log2(64) steps.
func TestOneStep(t *testing.T) {
	cost := func(i int) float64 {
		if i >= 41 {
			return math.Log(1.15)
		}
		return 0
	}
	s := run(t, 64, cost, 0.03, nil)
	c := s.Culprits()
	if len(c) != 1 || c[0].Index != 41 || math.Abs(c[0].Share-1) > 1e-9 || len(s.Ambiguities()) != 0 {
		t.Fatalf("culprits %+v, ambiguous %+v", c, s.Ambiguities())
	}
	if n := len(s.Steps()); n > 7 {
		t.Errorf("%d steps for 64 commits, want log2(64) = 6 or so", n)
	}
}

// Two +10% changes (commits 20 and 45): both found, each about half the
// change.
func TestTwoSteps(t *testing.T) {
	cost := func(i int) float64 {
		c := 0.0
		if i >= 20 {
			c += math.Log(1.10)
		}
		if i >= 45 {
			c += math.Log(1.10)
		}
		return c
	}
	s := run(t, 64, cost, 0.02, nil)
	c := s.Culprits()
	if len(c) != 2 || c[0].Index != 20 || c[1].Index != 45 || math.Abs(c[0].Share-0.5) > 0.05 || math.Abs(c[1].Share-0.5) > 0.05 {
		t.Fatalf("culprits %+v, ambiguous %+v, steps %+v", c, s.Ambiguities(), s.Steps())
	}
}

// A commit that does not build is skipped: the culprit beside it is found
// all the same; when the culprit itself does not build, the search names
// it and its neighbour as the commits the change could be any of.
func TestUnbuildable(t *testing.T) {
	cost := func(i int) float64 {
		if i >= 30 {
			return math.Log(1.15)
		}
		return 0
	}
	s := run(t, 64, cost, 0.03, map[int]bool{31: true, 32: true})
	if c := s.Culprits(); len(c) != 1 || c[0].Index != 30 {
		t.Fatalf("culprits %+v, ambiguous %+v", c, s.Ambiguities())
	}
	if sk := s.Skipped(); len(sk) == 0 || sk[0].Hash != fmt.Sprintf("%040d", 31) && sk[0].Hash != fmt.Sprintf("%040d", 32) {
		t.Errorf("skipped %+v", sk)
	}
	s = run(t, 64, cost, 0.03, map[int]bool{30: true})
	a := s.Ambiguities()
	if len(s.Culprits()) != 0 || len(a) != 1 || len(a[0].Commits) != 2 || a[0].Commits[0].Hash != fmt.Sprintf("%040d", 30) {
		t.Fatalf("a culprit that does not build: culprits %+v, ambiguous %+v", s.Culprits(), a)
	}
}

// A step too noisy to decide ends the search of its interval, named as
// ambiguous, instead of guessing.
func TestUndecidedIsAmbiguous(t *testing.T) {
	cost := func(i int) float64 {
		if i >= 10 {
			return math.Log(1.15)
		}
		return 0
	}
	s := run(t, 16, cost, 0.5, nil)
	a := s.Ambiguities()
	if len(s.Culprits()) != 0 || len(a) != 1 || len(a[0].Commits) != 15 {
		t.Fatalf("culprits %+v, ambiguous %+v", s.Culprits(), a)
	}
}

// A step's rounds judged: a commit like the low end, like the high end,
// halfway (in between), one too noisy to place; and a metric that fell.
// Measured draws them from per-round values.
func TestJudge(t *testing.T) {
	seq := stats.NewSequential(0.02, 6, 30, 3)
	rng := rand.New(rand.NewPCG(1, 2))
	rounds := func(n int, level, cv float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = level * (1 + cv*rng.NormFloat64())
		}
		return out
	}
	for _, c := range []struct {
		mid, high float64
		cv        float64
		want      Verdict
	}{
		{1, 1.2, 0.02, LikeLow},
		{1.2, 1.2, 0.02, LikeHigh},
		{1.095, 1.2, 0.02, Between},
		{1, 1.2, 0.5, Undecided},
		{1, 1 / 1.2, 0.02, LikeLow},
		{1 / 1.2, 1 / 1.2, 0.02, LikeHigh},
	} {
		m := Measured(rounds(20, 1, c.cv), rounds(20, c.mid, c.cv), rounds(20, c.high, c.cv), seq)
		if got, _ := Judge(m); got != c.want {
			t.Errorf("mid %v, high %v, cv %v: %s, want %s (%+v)", c.mid, c.high, c.cv, got, c.want, m)
		}
	}
	if differ, _ := Ends(Measured(rounds(10, 1, 0.02), nil, rounds(10, 1.15, 0.02), stats.NewSequential(0.02, 6, 30, 1)).Whole, 0.02); !differ {
		t.Error("ends 15% apart at 2% noise do not differ")
	}
	if differ, same := Ends(Measured(rounds(30, 1, 0.01), nil, rounds(30, 1, 0.01), stats.NewSequential(0.02, 6, 30, 1)).Whole, 0.02); differ || !same {
		t.Errorf("ends alike: differ %v, same %v", differ, same)
	}
	if _, err := New(commits(1)); err == nil {
		t.Error("a range of one commit")
	}
}
