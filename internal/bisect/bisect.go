// Package bisect searches a range of commits for the ones that changed a
// metric, each step decided by the statistics rather than by one
// measurement (asv's find) or a fixed number of them against a guessed
// threshold (git bisect run with a benchmark script, Pinpoint's fixed
// repetitions).
//
// A step measures one commit between the two ends of an interval — the
// commit known to be on the good side (lo) and the one on the bad side
// (hi) — in rounds interleaved with both, and judges where it lies on the
// log scale: like lo, like hi, or in between (a partial step: the change
// is spread over several commits, and both halves are searched). Each
// judgement uses intervals that stay valid however often they are looked
// at (the lab's confidence sequences), so a step stops as soon as it is
// decided; one still undecided at its rounds' cap leaves its interval
// ambiguous, reported as such, never guessed. A commit that does not
// build is skipped, as git bisect skip does.
//
// This package holds the search and the judgement; running a step is the
// caller's.
package bisect

import (
	"fmt"
	"math"
	"slices"

	"github.com/iolab/iolab/internal/stats"
)

// Verdict is where a step's commit lies between its interval's ends.
type Verdict string

const (
	LikeLow  Verdict = "like-good"
	LikeHigh Verdict = "like-bad"
	Between  Verdict = "between"
	// Undecided: not told apart at the step's most rounds.
	Undecided Verdict = "undecided"
	// Unbuildable: the commit did not build; skipped.
	Unbuildable Verdict = "unbuildable"
)

// Estimate is a log ratio (variant over baseline) with its 95% interval.
type Estimate struct {
	Log    float64
	Lo, Hi float64
}

// beyond says the whole interval lies past zero on the side of sign.
func (e Estimate) beyond(sign float64) bool {
	if sign > 0 {
		return e.Lo > 0
	}
	return e.Hi < 0
}

// Measure is what a step's rounds say: its commit against the low end
// (VsLow), the high end against it (ToHigh), the high end against the low
// one (Whole), and Centre, how far the commit lies from halfway between
// the ends (its log against the mean of theirs) — each the mean of
// per-round log ratios with an always-valid interval. Rounds is how many
// rounds had a run of every commit.
type Measure struct {
	VsLow, ToHigh, Whole, Centre Estimate
	Rounds                       int
}

// Measured estimates a step from its rounds: the metric's value in each
// round for low, mid and high (nil mid: the ends alone), judged by seq
// (its family the step's tests: two with a mid — the halfway test and
// the in-between one, an intersection-union test of two intervals — one
// without).
func Measured(low, mid, high []float64, seq stats.Sequential) Measure {
	var m Measure
	var vsLow, toHigh, whole, centre []float64
	for r := range low {
		l, h := math.Log(low[r]), math.Log(high[r])
		whole = append(whole, h-l)
		if mid != nil {
			c := math.Log(mid[r])
			vsLow, toHigh, centre = append(vsLow, c-l), append(toHigh, h-c), append(centre, c-(l+h)/2)
		}
	}
	m.Rounds = len(whole)
	if m.Rounds < 2 {
		nan := Estimate{math.NaN(), math.NaN(), math.NaN()}
		return Measure{nan, nan, nan, nan, m.Rounds}
	}
	est := func(d []float64) Estimate {
		if d == nil {
			return Estimate{math.NaN(), math.NaN(), math.NaN()}
		}
		mu, lo, hi := seq.Interval(d)
		return Estimate{mu, lo, hi}
	}
	m.VsLow, m.ToHigh, m.Whole, m.Centre = est(vsLow), est(toHigh), est(whole), est(centre)
	return m
}

// Ends judges the first step, the range's ends measured against each
// other: they differ when the interval excludes no change, are the same
// when it lies within ±threshold (a share: 0.02 is 2%); else neither is
// shown yet.
func Ends(whole Estimate, threshold float64) (differ, same bool) {
	half := math.Log1p(threshold)
	return whole.beyond(math.Copysign(1, whole.Log)), whole.Lo > -half && whole.Hi < half
}

// Judge says where a step's commit lies between its interval's ends. In
// between: it differs from both ends, each the way the step goes. Else
// like the end it lies nearer to, once its distance from halfway is
// shown. Otherwise undecided. Position is where the commit lies, 0 at the
// low end and 1 at the high end (its share of the step).
func Judge(m Measure) (v Verdict, position float64) {
	if math.IsNaN(m.Whole.Log) || m.Whole.Log == 0 || math.IsNaN(m.Centre.Log) {
		return Undecided, math.NaN()
	}
	sign := math.Copysign(1, m.Whole.Log)
	position = m.VsLow.Log / m.Whole.Log
	switch {
	case m.VsLow.beyond(sign) && m.ToHigh.beyond(sign):
		return Between, math.Max(0, math.Min(1, position))
	case m.Centre.beyond(-sign):
		return LikeLow, 0
	case m.Centre.beyond(sign):
		return LikeHigh, 1
	}
	return Undecided, position
}

// Commit is one commit of the range, oldest first.
type Commit struct {
	Hash    string `json:"hash"`
	Subject string `json:"subject"`
	Date    string `json:"date"`
}

// Step is one measured commit: the interval it was measured in, by index
// into the search's commits, and what it was found to be.
type Step struct {
	Low, Mid, High int
	Verdict        Verdict
	// Position is the commit's share of the interval's step (0 like the
	// low end, 1 like the high end); Runs what the step cost.
	Position float64
	Runs     int
}

// Culprit is a commit that holds a change: all of it, or its share.
type Culprit struct {
	Commit
	Index int `json:"index"`
	// Share is its part of the whole change, from good to bad (1: all).
	Share float64 `json:"share"`
}

// Ambiguous is an interval the search could not narrow: why, and the
// commits the change could be any of.
type Ambiguous struct {
	Why     string   `json:"why"`
	Commits []Commit `json:"commits"`
}

// Search is the state of a bisection over Commits (Commits[0] good,
// the last bad), built from its steps in order.
type Search struct {
	Commits []Commit
	// position of each commit the search placed, 0 good to 1 bad.
	position map[int]float64
	tried    map[int]Verdict
	// open are the intervals still to narrow, oldest first; each holds a
	// part of the change.
	open      [][2]int
	culprits  []Culprit
	ambiguous []Ambiguous
	steps     []Step
}

// New starts a search over commits (good first, bad last), whose ends
// are known to differ.
func New(commits []Commit) (*Search, error) {
	if len(commits) < 2 {
		return nil, fmt.Errorf("a range of %d commits: want the good and the bad commit at least", len(commits))
	}
	s := &Search{Commits: commits, position: map[int]float64{0: 0, len(commits) - 1: 1}, tried: map[int]Verdict{}}
	s.open = [][2]int{{0, len(commits) - 1}}
	s.settle()
	return s, nil
}

// Next is the next step to measure: the interval's ends and the commit
// between them; false once the search is done.
func (s *Search) Next() (lo, mid, hi int, ok bool) {
	if len(s.open) == 0 {
		return 0, 0, 0, false
	}
	iv := s.open[0]
	return iv[0], s.middle(iv), iv[1], true
}

// middle is the untried commit of an interval nearest its middle (the
// older of two); -1 if none is left.
func (s *Search) middle(iv [2]int) int {
	best := -1
	centre := float64(iv[0]+iv[1]) / 2
	for i := iv[0] + 1; i < iv[1]; i++ {
		if _, done := s.tried[i]; done {
			continue
		}
		if best < 0 || math.Abs(float64(i)-centre) < math.Abs(float64(best)-centre) {
			best = i
		}
	}
	return best
}

// Record takes the outcome of the step Next gave.
func (s *Search) Record(st Step) error {
	lo, mid, hi, ok := s.Next()
	if !ok || st.Low != lo || st.Mid != mid || st.High != hi {
		return fmt.Errorf("step %d<%d<%d is not the search's next (%d<%d<%d, %v)", st.Low, st.Mid, st.High, lo, mid, hi, ok)
	}
	s.steps = append(s.steps, st)
	s.tried[mid] = st.Verdict
	s.open = s.open[1:]
	pl, ph := s.position[lo], s.position[hi]
	var next [][2]int
	switch st.Verdict {
	case LikeLow:
		s.position[mid] = pl
		next = [][2]int{{mid, hi}}
	case LikeHigh:
		s.position[mid] = ph
		next = [][2]int{{lo, mid}}
	case Between:
		s.position[mid] = pl + st.Position*(ph-pl)
		next = [][2]int{{lo, mid}, {mid, hi}}
	case Unbuildable:
		next = [][2]int{{lo, hi}}
	case Undecided:
		s.ambiguous = append(s.ambiguous, Ambiguous{
			Why:     fmt.Sprintf("%s could not be placed between %s and %s in the most rounds a step runs (--max-rounds)", short(s.Commits[mid]), short(s.Commits[lo]), short(s.Commits[hi])),
			Commits: s.Commits[lo+1 : hi+1]})
	default:
		return fmt.Errorf("step of %s: verdict %q", s.Commits[mid].Hash, st.Verdict)
	}
	s.open = append(next, s.open...)
	s.settle()
	return nil
}

// settle closes the open intervals that hold nothing left to try: one of
// adjacent commits names its high end the culprit; one whose every
// commit between did not build, any of them.
func (s *Search) settle() {
	var keep [][2]int
	for _, iv := range s.open {
		lo, hi := iv[0], iv[1]
		if s.middle(iv) >= 0 {
			keep = append(keep, iv)
			continue
		}
		share := s.position[hi] - s.position[lo]
		if hi == lo+1 {
			s.culprits = append(s.culprits, Culprit{Commit: s.Commits[hi], Index: hi, Share: share})
			continue
		}
		s.ambiguous = append(s.ambiguous, Ambiguous{
			Why:     fmt.Sprintf("only commits that do not build lie between %s and %s (%.0f%% of the change)", short(s.Commits[lo]), short(s.Commits[hi]), 100*share),
			Commits: s.Commits[lo+1 : hi+1]})
	}
	s.open = keep
}

// Place is where the search placed commit i on the whole change (0 good,
// 1 bad); false for a commit it did not place.
func (s *Search) Place(i int) (float64, bool) {
	p, ok := s.position[i]
	return p, ok
}

// Done says the search has nothing left to measure.
func (s *Search) Done() bool { return len(s.open) == 0 }

// Culprits are the commits found to hold the change, oldest first.
func (s *Search) Culprits() []Culprit {
	out := slices.Clone(s.culprits)
	slices.SortFunc(out, func(a, b Culprit) int { return a.Index - b.Index })
	return out
}

// Ambiguities are the intervals the search could not narrow.
func (s *Search) Ambiguities() []Ambiguous { return slices.Clone(s.ambiguous) }

// Steps are the steps recorded, in order.
func (s *Search) Steps() []Step { return slices.Clone(s.steps) }

// Skipped are the commits that did not build.
func (s *Search) Skipped() []Commit {
	var out []Commit
	for i, c := range s.Commits {
		if s.tried[i] == Unbuildable {
			out = append(out, c)
		}
	}
	return out
}

func short(c Commit) string {
	if len(c.Hash) > 10 {
		return c.Hash[:10]
	}
	return c.Hash
}
