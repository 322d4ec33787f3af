package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
)

// SLOView is one variant's search, at one point of a workload's matrix,
// for the highest rate at which an SLO holds with 95% confidence: the
// loads it tried, what each decided, and the bracket it ended with.
type SLOView struct {
	Variant string `json:"variant,omitempty"`
	Cell    string `json:"cell"`
	// SLO is the objective as written (get.response_p99_ns < 20ms).
	SLO    string  `json:"slo"`
	Metric string  `json:"metric"`
	Below  float64 `json:"below"`
	// Calibrated is the rate the loads are shares of: the highest any
	// variant's calibration runs reached flat out (its own, each, in
	// Calibrations).
	Calibrated   float64   `json:"calibrated_ops_per_s"`
	Calibrations []float64 `json:"calibration_runs_ops_per_s,omitempty"`
	// Held is the highest rate the objective was shown to hold at (0:
	// none); NotHeld the lowest it was not shown to hold at (the
	// flat-out rate while none was): the highest sustainable rate lies
	// between them.
	Held    float64 `json:"held_ops_per_s"`
	NotHeld float64 `json:"not_held_ops_per_s"`
	// Failed is the lowest rate the objective was shown to fail at (0:
	// none): the highest sustainable rate is below it.
	Failed float64 `json:"failed_ops_per_s"`
	// Undecided is the lowest rate above Held whose runs neither showed
	// the objective to hold nor to fail (0: none).
	Undecided float64 `json:"undecided_ops_per_s,omitempty"`
	// MinOps is the operations a run needs for the SLO's percentile
	// (plan.SLO.MinOps; 0: no percentile).
	MinOps int64 `json:"min_ops,omitempty"`
	// Bounded says a load was not shown to hold; until one is, the
	// search's range doubles, and Top is the highest rate it reached.
	Bounded bool      `json:"bounded"`
	Top     float64   `json:"top_ops_per_s"`
	Steps   []SLOStep `json:"steps"`
	Runs    int       `json:"runs"`
	// ClientMissed is the runs that missed the objective while iolab's
	// own delay was past its share (plan.SLO.Outcome): not counted, their
	// loads run again.
	ClientMissed int `json:"client_missed,omitempty"`
	// SetAside is the runs that missed the objective while the machine
	// starved iolab of CPU, set aside (stats.SLOSearch.SetAside): their
	// loads ran again.
	SetAside int `json:"set_aside,omitempty"`
	// Done says the search ended; a search cut short says where it was.
	Done bool `json:"done"`
}

// SLOStep is one load a search tried.
type SLOStep struct {
	stats.SLOStep
	Offered float64 `json:"offered_ops_per_s"`
	// Achieved is the median rate the step's runs reached.
	Achieved float64 `json:"achieved_ops_per_s"`
	// FewestOps is the operations of the step's shortest run: under the
	// SLO's MinOps its percentile is about the run's largest few.
	FewestOps int64 `json:"fewest_ops"`
	// Capped says a run of the step had every worker it may add busy
	// (--max-concurrency): the cap, not only the target, held it back.
	Capped bool `json:"capped,omitempty"`
}

// MarshalJSON writes the step, a failed step's NaN ratio and interval as
// null: JSON has no NaN.
func (s SLOStep) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Share     float64 `json:"share"`
		Runs      int     `json:"runs"`
		Verdict   string  `json:"verdict"`
		Ratio     any     `json:"ratio"`
		CI95      [2]any  `json:"ci95"`
		Failed    bool    `json:"failed,omitempty"`
		Offered   float64 `json:"offered_ops_per_s"`
		Achieved  float64 `json:"achieved_ops_per_s"`
		FewestOps int64   `json:"fewest_ops"`
		Capped    bool    `json:"capped,omitempty"`
	}{s.Share, s.Runs, s.Verdict, stats.JSONNumber(s.Ratio), [2]any{stats.JSONNumber(s.CI95[0]), stats.JSONNumber(s.CI95[1])}, s.Failed,
		s.Offered, s.Achieved, s.FewestOps, s.Capped})
}

// SLOComparison is a variant's highest sustainable rate against the
// baseline's: the ratio of the middles of their brackets, and the range
// the searches allow — from the rate one held at to the lowest the other
// was shown to fail at (Low nil: the baseline was shown to fail nowhere,
// so it may sustain any more; High nil: nor was the variant). More or
// Less only when the one's objective was shown to hold at a rate where
// the other's was shown to fail.
type SLOComparison struct {
	Cell     string   `json:"cell"`
	SLO      string   `json:"slo"`
	Baseline string   `json:"baseline"`
	Variant  string   `json:"variant"`
	Ratio    float64  `json:"ratio"`
	Low      *float64 `json:"low"`
	High     *float64 `json:"high"`
	Verdict  string   `json:"verdict"` // more, less, inconclusive
}

// SLO comparison verdicts.
const (
	SustainsMore = "more"
	SustainsLess = "less"
)

// Searched says the cell is an SLO search: its runs are each at the
// load the search was at, not repeats of one, so they are neither
// compared between variants nor judged for noise as repeats are.
func Searched(c store.Cell) bool { return c.Params[plan.LoadParam] == plan.LoadSLO }

// SustainedMetric is a search's answer as one figure of its experiment:
// the highest rate its objective was shown to hold at (0 if none was),
// which a history follows across experiments.
const SustainedMetric = "slo_ops_per_s"

func init() {
	metrics.Declare(metrics.Def{Name: SustainedMetric, Label: "ops/s sustained under the SLO", Unit: "ops/s",
		Better: metrics.HigherIsBetter, Zeroable: true})
}

// sustained is SustainedMetric of search cell c of d, as the one value of
// its experiment, with what the search found beside it (a note); none if
// c is no search this iolab reads, or one that took no step.
func sustained(dm derivedMetrics, d *store.Data, byCell map[int64][]store.Run, c store.Cell) ([]float64, string) {
	o, runsPerStep, ok := plan.SLOOf(c.Params)
	if !Searched(c) || !ok {
		return nil, ""
	}
	perCell := make([][]store.Run, len(d.Cells))
	i := -1
	for j, cc := range d.Cells {
		perCell[j] = byCell[cc.ID]
		if cc.ID == c.ID {
			i = j
		}
	}
	v := searchOf(dm, d, perCell, i, o, runsPerStep)
	if v.Runs == 0 {
		return nil, ""
	}
	def, _ := metrics.Describe(SustainedMetric)
	note := fmt.Sprintf("search: held at %s ops/s", def.Format(v.Held))
	if v.Failed > 0 {
		note += fmt.Sprintf(", shown to fail at %s", def.Format(v.Failed))
	}
	if v.Undecided > 0 {
		note += fmt.Sprintf(", undecided at %s", def.Format(v.Undecided))
	}
	note += fmt.Sprintf("; %d runs", v.Runs)
	if v.ClientMissed > 0 {
		note += fmt.Sprintf(" (and %d not counted: iolab's own delay missed the objective, not the target)", v.ClientMissed)
	}
	if v.SetAside > 0 {
		note += fmt.Sprintf(" (and %d set aside: they missed the objective while the machine starved iolab of CPU)", v.SetAside)
	}
	if !v.Done {
		note += "; it did not end: the rate held is a lower bound"
	}
	return []float64{v.Held}, note
}

// slos replays each search cell's measured runs, in order, through the
// same search that chose their loads.
func (r *Report) slos(d *store.Data, perCell [][]store.Run) {
	for i, c := range d.Cells {
		if !Searched(c) {
			continue
		}
		o, runsPerStep, ok := plan.SLOOf(c.Params)
		if !ok { // said, never skipped in silence
			r.Warnings = append(r.Warnings, stats.Warning{Code: "unreadable-search", Message: fmt.Sprintf(
				"%s/%s: an SLO search whose objective is not stored as this iolab reads it (slo_metric, slo_below, slo_precision, slo_runs_per_step); its runs are shown, its search is not", c.Variant, c.Name)})
			continue
		}
		r.SLOs = append(r.SLOs, searchOf(r.derived, d, perCell, i, o, runsPerStep))
	}
	r.compareSLOs()
}

// searchOf replays search cell i's measured runs, in order, through the
// same search that chose their loads: its view.
func searchOf(dm derivedMetrics, d *store.Data, perCell [][]store.Run, i int, o plan.SLO, runsPerStep int) SLOView {
	c := d.Cells[i]
	name := loadless(c)
	v := SLOView{Variant: c.Variant, Cell: name, SLO: o.String(), Metric: o.Metric, Below: o.Below, MinOps: o.MinOps()}
	// Every variant's search is over shares of the highest rate any
	// reached flat out.
	for j, f := range d.Cells {
		if f.Params[plan.LoadParam] == plan.LoadMax && loadless(f) == name {
			rates := calibrationRates(dm, perCell[j])
			for _, r := range rates {
				v.Calibrated = math.Max(v.Calibrated, r)
			}
			if f.Variant == c.Variant {
				v.Calibrations = rates
			}
		}
	}
	search, cpus, segmented := o.NewSearch(runsPerStep), cpusOf(d), d.Experiment.SegmentGroup != ""
	achieved, fewest, capped := map[int][]float64{}, map[int]int64{}, map[int]bool{}
	runs := slices.Clone(perCell[i]) // in the order the search took them
	slices.SortStableFunc(runs, func(a, b store.Run) int { return a.Round - b.Round })
	for _, run := range runs {
		finding := run.Status == store.StatusFailed && run.Result != nil && run.Result.Errors > 0
		if run.Warmup || (run.Status != store.StatusOK && !finding) || search.Done() {
			continue
		}
		step := len(search.Steps) - 1
		m := dm.of(run.Result)
		if run.Status != store.StatusOK {
			search.Add(0, false)
		} else {
			switch o.Take(search, m, o.Starved(m, run.Result.Duration, cpus, segmented)) {
			case plan.Unmeasured:
				continue // stored as failed when it ran (see experiment's ran)
			case plan.ClientMissed:
				v.ClientMissed++
				continue
			case plan.SetAside:
				v.SetAside++
				continue
			}
		}
		achieved[step] = append(achieved[step], m["ops_per_s"])
		if n := run.Result.Ops(); fewest[step] == 0 || n < fewest[step] {
			fewest[step] = n
		}
		if m["workers_cap"] > 0 && m["workers_peak"] >= m["workers_cap"] {
			capped[step] = true
		}
		v.Runs++
	}
	for k, s := range search.Steps {
		if s.Runs == 0 {
			continue
		}
		v.Steps = append(v.Steps, SLOStep{SLOStep: s, Offered: s.Share * v.Calibrated, Achieved: stats.Summarize(achieved[k]).Median, FewestOps: fewest[k],
			Capped: capped[k]})
	}
	v.Done = search.Done()
	v.Held, v.NotHeld = search.Lo*v.Calibrated, search.Hi*v.Calibrated
	v.Bounded, v.Top = search.Bounded, search.Top*v.Calibrated
	for _, s := range search.Steps {
		f := s.Share * v.Calibrated
		if s.Verdict == stats.Fails && (v.Failed == 0 || f < v.Failed) {
			v.Failed = f
		}
		if s.Verdict == stats.Undecided && f > v.Held && (v.Undecided == 0 || f < v.Undecided) {
			v.Undecided = f
		}
	}
	return v
}

// compareSLOs compares each variant's search with the baseline's, cell by
// cell.
func (r *Report) compareSLOs() {
	base := map[string]SLOView{}
	for _, v := range r.SLOs {
		if v.Variant == r.Baseline || r.Baseline == "" {
			if _, ok := base[v.Cell]; !ok {
				base[v.Cell] = v
			}
		}
	}
	for _, v := range r.SLOs {
		b, ok := base[v.Cell]
		if !ok || b.Variant == v.Variant || b.Held <= 0 || v.Held <= 0 {
			continue
		}
		c := SLOComparison{Cell: v.Cell, SLO: v.SLO, Baseline: b.Variant, Variant: v.Variant,
			Ratio: (v.Held + v.NotHeld) / (b.Held + b.NotHeld), Verdict: stats.Inconclusive}
		if b.Failed > 0 {
			low := v.Held / b.Failed
			c.Low = &low
		}
		if v.Failed > 0 {
			high := v.Failed / b.Held
			c.High = &high
		}
		switch {
		case b.Failed > 0 && v.Held >= b.Failed:
			c.Verdict = SustainsMore
		case v.Failed > 0 && b.Held >= v.Failed:
			c.Verdict = SustainsLess
		}
		r.SLOComparisons = append(r.SLOComparisons, c)
	}
}
