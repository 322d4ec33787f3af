package plan

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/stats"
)

// SLO is a service level objective: Metric below Below (in the metric's
// unit: ns for a time), to be held with 95% confidence; the search for
// the highest rate it allows ends when it is bracketed within Precision.
type SLO struct {
	Metric    string  `json:"metric"`
	Below     float64 `json:"below"`
	BelowText string  `json:"-"`
	Precision float64 `json:"precision"`
	Pos       Pos     `json:"-"`
	// Fixed marks a search stored by an iolab whose search bisected under
	// a fixed top in at most 8 loads (before 2026-11-27): its runs replay
	// through that search, not today's, which widens its range.
	Fixed bool `json:"-"`
}

// String is the objective as a user writes it: get.response_p99_ns < 20ms.
func (o SLO) String() string { return o.Metric + " < " + o.BelowText }

// SLOKeys are the keys of a workload's slo:.
var SLOKeys = []string{"metric", "below", "precision"}

// NewSearch starts a search for the objective, each step taking at most
// runsPerStep runs.
func (o SLO) NewSearch(runsPerStep int) *stats.SLOSearch {
	if o.Fixed {
		return stats.NewSLOSearch(o.Precision, SLOMinRuns, runsPerStep, fixedMaxSteps)
	}
	s := stats.NewSLOSearch(o.Precision, SLOMinRuns, runsPerStep, SLOMaxSteps)
	s.Widens, s.SetsAside = true, true
	return s
}

// fixedMaxSteps is the most loads a Fixed search tried.
const fixedMaxSteps = 8

// searchWalk is how a search's cell says its search widens its range.
const searchWalk = "widening"

// Outcome is what a run at a search's load, of these metrics, says of
// the objective: the metric over its bound (found false when the run
// measured no such metric), and whether the search counts it. A run that
// missed the objective while its client was delayed (metrics.ClientDelayed:
// iolab's own delay past its share of what was measured) says nothing of
// the target — the client missed it — and is not counted: the search runs
// that load again. One that held despite it held. The search and its
// replay in the report judge every run here.
func (o SLO) Outcome(m map[string]float64) (ratio float64, found, counts bool) {
	v, found := m[o.Metric]
	if !found {
		return 0, false, false
	}
	ratio = v / o.Below
	return ratio, true, ratio < 1 || !metrics.ClientDelayed(m)
}

// Taken is what a run at a search's load did to the search (SLO.Take).
type Taken int

const (
	// Counted: the run moved the search on.
	Counted Taken = iota
	// Unmeasured: the run measured no such metric.
	Unmeasured
	// ClientMissed: the run missed the objective by iolab's own delay
	// (Outcome); not counted, its load runs again.
	ClientMissed
	// SetAside: the run missed the objective while the machine starved
	// iolab of CPU, and was set aside (stats.SLOSearch.SetAside); its load
	// runs again.
	SetAside
)

// Starved says whether a run's generator was starved of CPU as a search
// counts it: metrics.Starved on a machine of cpus CPUs, and never for a
// load run in segments — its merged runs span machines whose CPU counts
// differ, and every segment must take the same steps, so it sets no run
// aside. The search that runs the loads and its replay both ask here.
func (o SLO) Starved(m map[string]float64, d time.Duration, cpus int, segmented bool) bool {
	return !segmented && metrics.Starved(m, d, cpus)
}

// Take judges a successful run at search s's load, of metrics m whose
// generator was starved of CPU or not (metrics.Starved), and moves the
// search on by it unless it is not to be counted. The search that runs
// the loads and its replay in the report take every run here.
func (o SLO) Take(s *stats.SLOSearch, m map[string]float64, starved bool) Taken {
	ratio, found, counts := o.Outcome(m)
	switch {
	case !found:
		return Unmeasured
	case !counts:
		return ClientMissed
	case ratio >= 1 && starved && s.SetAside():
		return SetAside
	}
	s.Add(ratio, true)
	return Counted
}

// MinOps is how many operations a run must hold for the objective's
// percentile to be more than its largest few: 10/(1−q) for quantile q
// (1,000 for a p99, 20 for a median); 0 for a metric of no percentile.
func (o SLO) MinOps() int64 {
	at := strings.LastIndex(o.Metric, "_p")
	if at < 0 {
		return 0
	}
	digits, _, _ := strings.Cut(o.Metric[at+2:], "_")
	pct, err := strconv.ParseFloat(digits, 64)
	if err != nil || pct <= 0 || pct >= 100 {
		return 0
	}
	return int64(math.Ceil(10/(1-pct/100) - 1e-6)) // (1−0.999 is not exact)
}

// Params are what a search's cell stores of its objective and its
// search, for the report to replay the search from its runs.
func (o SLO) Params(runsPerStep int) map[string]string {
	return map[string]string{"slo": o.String(), "slo_metric": o.Metric, "slo_below": strconv.FormatFloat(o.Below, 'g', -1, 64),
		"slo_precision": strconv.FormatFloat(o.Precision, 'g', -1, 64), "slo_runs_per_step": strconv.Itoa(runsPerStep), "slo_walk": searchWalk}
}

// SLOOf reads back a search cell's objective and runs per step; false
// for a cell of no search (or one stored by an iolab that wrote them
// otherwise).
func SLOOf(params map[string]string) (SLO, int, bool) {
	o := SLO{Metric: params["slo_metric"], BelowText: strings.TrimPrefix(params["slo"], params["slo_metric"]+" < ")}
	below, err1 := strconv.ParseFloat(params["slo_below"], 64)
	precision, err2 := strconv.ParseFloat(params["slo_precision"], 64)
	runs, err3 := strconv.Atoi(params["slo_runs_per_step"])
	if o.Metric == "" || err1 != nil || err2 != nil || err3 != nil || below <= 0 || precision <= 0 || runs < 1 {
		return SLO{}, 0, false
	}
	o.Below, o.Precision, o.Fixed = below, precision, params["slo_walk"] != searchWalk
	return o, runs, true
}

// How an SLO is searched: each step takes from SLOMinRuns runs to the
// plan's rounds, and a search at most SLOMaxSteps steps.
const (
	SLOMinRuns  = 3
	SLOMaxSteps = 10
)
