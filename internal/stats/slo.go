package stats

import (
	"math"
)

// SLO step verdicts.
const (
	Holds     = "holds"
	Fails     = "fails"
	Undecided = "undecided"
)

// SLOSearch finds the highest load at which a service level objective —
// a metric, such as a response-time percentile, below a bound — holds
// with 95% confidence, over shares of the flat-out rate. It starts at half
// of SLOTop (a quarter above flat out, as a closed-loop run's own measure
// of its rate can fall short of what a schedule sustains: its first and
// last operations in flight), and while every load has held it tries the
// top of its range next; a top that holds doubles the range, up to
// SLOWidest — the flat-out rate it was drawn from was low (one unlucky
// calibration), and a load that holds is never the answer's upper end.
// Once a load was not shown to hold, it bisects between the highest share
// shown to hold and the lowest not shown to.
//
// Each step's runs are judged as they come by an always-valid confidence
// sequence (Sequential) for the mean of metric/bound over the step's
// runs: wholly below 1 the objective holds at that load, wholly above it
// fails; a step that reaches MaxRuns undecided has not been shown to hold
// (nor to fail: the report says so), and one run that fails (errors at
// that load, operations cut) fails it. The search ends when the bracket
// is within Precision of its upper end, or after MaxSteps steps.
//
// It is a pure function of the runs added, in order: the search that
// chose the loads and the report that shows it replay the same runs to
// the same steps.
type SLOSearch struct {
	Precision                  float64
	MinRuns, MaxRuns, MaxSteps int
	// Lo is the highest share shown to hold (0: none yet), Hi the lowest
	// not shown to hold (Top until one is: Bounded).
	Lo, Hi float64
	// Top is the upper end of the range searched: SLOTop, doubled while
	// every load held when the search Widens (without, it bisects under
	// SLOTop from the start, as iolab's searches did before 2026-11-27).
	Top     float64
	Bounded bool
	Widens  bool
	// SetsAside says a step sets aside up to SLOSetAside runs that missed
	// the objective while the machine starved the generator (SetAside).
	SetsAside bool
	Steps     []SLOStep
	seq       Sequential
	cur       []float64
}

// SLOStep is one load of a search and what its runs said.
type SLOStep struct {
	Share   float64 `json:"share"`
	Runs    int     `json:"runs"`
	Verdict string  `json:"verdict"` // Holds, Fails, Undecided; "" while it runs
	// Ratio is the mean of metric/bound over the step's runs and CI95
	// the sequence's interval of it; a failed run leaves both NaN.
	Ratio float64    `json:"ratio"`
	CI95  [2]float64 `json:"ci95"`
	// Failed says a run of the step failed.
	Failed bool `json:"failed,omitempty"`
	// SetAside is the runs of the step set aside (SLOSearch.SetAside),
	// not among its Runs.
	SetAside int `json:"set_aside,omitempty"`
}

// SLOTop is the upper end of a search's first range, as a share of the
// flat-out rate; SLOWidest the most a range is widened to.
const (
	SLOTop    = 1.25
	SLOWidest = 10.0
)

// SLOSetAside is the most runs a step sets aside.
const SLOSetAside = 2

// NewSLOSearch starts a search whose steps take from minRuns (at least
// 2) to maxRuns runs each.
func NewSLOSearch(precision float64, minRuns, maxRuns, maxSteps int) *SLOSearch {
	minRuns = max(minRuns, 2)
	maxRuns = max(maxRuns, minRuns)
	s := &SLOSearch{Precision: precision, MinRuns: minRuns, MaxRuns: maxRuns, MaxSteps: maxSteps, Hi: SLOTop, Top: SLOTop,
		seq: NewSequential(0, minRuns, maxRuns, 1)}
	s.Steps = []SLOStep{{Share: SLOTop / 2, Ratio: math.NaN(), CI95: [2]float64{math.NaN(), math.NaN()}}}
	return s
}

// Done says the search has ended.
func (s *SLOSearch) Done() bool { return s.Steps[len(s.Steps)-1].Verdict != "" }

// Share is the load the next run is to be at, as a share of the
// flat-out rate; 0 once the search is done.
func (s *SLOSearch) Share() float64 {
	if s.Done() {
		return 0
	}
	return s.Steps[len(s.Steps)-1].Share
}

// MaxTotalRuns is the most runs a search can take, those set aside
// included.
func (s *SLOSearch) MaxTotalRuns() int {
	if s.SetsAside {
		return s.MaxSteps * (s.MaxRuns + SLOSetAside)
	}
	return s.MaxSteps * s.MaxRuns
}

// SetAside takes a run that missed the objective while the machine
// starved its generator of CPU — a burst of other work, which slows a
// target beside it too — and says whether the run is set aside, its load
// run again: a step's first SLOSetAside such runs are, so that one burst
// does not decide a load; later ones are the machine the target runs on,
// and are to be added. It does nothing once the search is done.
func (s *SLOSearch) SetAside() bool {
	if s.Done() || !s.SetsAside {
		return false
	}
	step := &s.Steps[len(s.Steps)-1]
	if step.SetAside >= SLOSetAside {
		return false
	}
	step.SetAside++
	return true
}

// Add takes the next run: its metric over the bound, or ok false for a
// run that failed. It does nothing once the search is done.
func (s *SLOSearch) Add(ratio float64, ok bool) {
	if s.Done() {
		return
	}
	step := &s.Steps[len(s.Steps)-1]
	step.Runs++
	if !ok || !(ratio > 0) || math.IsInf(ratio, 0) {
		step.Failed = true
		s.decide(Fails)
		return
	}
	// On the metric's own scale, not its log's: a run whose tail is a
	// thousand times another's, both far below the bound, is no doubt
	// about the bound (on a log scale it would leave the load undecided).
	s.cur = append(s.cur, ratio-1)
	if len(s.cur) < s.MinRuns {
		return
	}
	d := append([]float64(nil), s.cur...)
	mu, _, h, _ := s.seq.interval(d)
	step.Ratio, step.CI95 = 1+mu, [2]float64{1 + mu - h, 1 + mu + h}
	switch {
	case mu+h < 0:
		s.decide(Holds)
	case mu-h > 0:
		s.decide(Fails)
	case step.Runs >= s.MaxRuns:
		s.decide(Undecided)
	}
}

// decide ends the current step and starts the next, unless the bracket
// is narrow enough or the steps are spent.
func (s *SLOSearch) decide(verdict string) {
	step := &s.Steps[len(s.Steps)-1]
	if verdict == Holds {
		s.Lo = math.Max(s.Lo, step.Share)
	} else {
		s.Hi, s.Bounded = math.Min(s.Hi, step.Share), true
	}
	s.cur = s.cur[:0]
	step.Verdict = verdict
	if len(s.Steps) >= s.MaxSteps {
		return
	}
	next := (s.Lo + s.Hi) / 2
	switch {
	case s.Widens && !s.Bounded && s.Lo < s.Top:
		next = s.Top // every load held: try the top
	case s.Widens && !s.Bounded && s.Top < SLOWidest:
		s.Top = math.Min(2*s.Top, SLOWidest) // and it held too
		s.Hi, next = s.Top, s.Top
	case s.Hi-s.Lo <= s.Precision*s.Hi, s.Widens && !s.Bounded:
		return
	}
	s.Steps = append(s.Steps, SLOStep{Share: next, Ratio: math.NaN(), CI95: [2]float64{math.NaN(), math.NaN()}})
}
