package experiment

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/stats"
)

// sloSearch is one variant's search, at one point of its workload's
// matrix, for the highest rate the workload's SLO allows: a cell whose
// every run is at the load the search is at, built anew for each run.
// Every variant's search runs over the same rates (curveLoad.base), so
// that one variant's objective can be shown to fail where another's
// holds.
type sloSearch struct {
	slo *plan.SLO
	*stats.SLOSearch
	// segmented is a load run in segments (plan.SLO.Starved).
	segmented bool
}

// highest is the highest rate the calibrations reached.
func highest(flat map[string]*calibration) func() float64 {
	return func() float64 {
		top := 0.0
		for _, c := range flat {
			top = max(top, c.rate())
		}
		return top
	}
}

// ran is the search cell's lab.Cell.Ran: each measured run's metric,
// over the bound, moves the search on. A run that measured no such
// metric is an error, never a pass.
func (s *sloSearch) ran(res *metrics.Result, ok bool) error {
	if !ok {
		s.Add(0, false)
		return nil
	}
	m := metrics.RunMetrics(res)
	if s.slo.Take(s.SLOSearch, m, s.slo.Starved(m, res.Duration, runtime.NumCPU(), s.segmented)) == plan.Unmeasured {
		return fmt.Errorf("slo.metric %s: the run measured no such metric; it measured %s", s.slo.Metric, strings.Join(slices.Sorted(maps.Keys(m)), ", "))
	}
	return nil
}
