package experiment

import (
	"errors"
	"fmt"
	"strings"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/workload"
)

// A workload with a curve (vdbench's curve=) or an SLO is a cell per
// load: one flat out, at the depth its keys give, whose first run — its
// calibration — measures its variant's rate flat out; the others run on
// a schedule at shares of the highest of those (the same rates for every
// variant). The flat-out cell runs in the rounds too: the curve's last
// point.

func init() {
	// The rate a paced load of a curve or a search asked for: a share of
	// a flat-out rate, each run's.
	metrics.Declare(metrics.Def{Name: "offered_ops_per_s", Label: "offered ops/s", Unit: "ops/s"})
}

// curveLoad is a cell's point on its workload's curve: flat out, a share
// of that, or the load an SLO search is at.
type curveLoad struct {
	pct    float64 // percent of the flat-out rate; 0 flat out or searched
	search *sloSearch
	flat   *calibration
	// base is the rate the loads are shares of: the highest any variant
	// reached flat out, so that a load is the same rate for every
	// variant, and one that cannot keep it shows so.
	base func() float64
}

func (l *curveLoad) flatOut() bool { return l.pct == 0 && l.search == nil }

// share is the load as a share of the rate its own variant reached flat
// out (what its options are paced by): its share of base — for a
// search, the share its next run is at (0 once it ended) — scaled by
// base over its own rate; 0 flat out.
func (l *curveLoad) share() float64 {
	own := l.flat.rate()
	if l.flatOut() || own <= 0 {
		return 0
	}
	share := l.pct / 100
	if l.search != nil {
		share = l.search.Share()
	}
	return share * l.base() / own
}

// name is the load as a cell's name and parameters show it.
func (l *curveLoad) name() string {
	switch {
	case l.search != nil:
		return plan.LoadSLO
	case l.flatOut():
		return plan.LoadMax
	}
	return plan.CurveLoad(l.pct)
}

// calibration is what a variant's flat-out cell of one matrix point
// measured in its calibration runs (store.CalibrationRuns): the fastest
// so far, res, whose rate (and mix) the paced loads take shares of. The
// fastest, not a middle one, as the analysis takes it (its view's
// Calibrated): a flat-out run falls short of what the target can do for
// reasons of its own (a cold cache, a burst of other work, a closed
// loop's first and last operations in flight), never above it.
type calibration struct{ res *metrics.Result }

// rate is the operations per second the calibration reached; 0 before.
func (c *calibration) rate() float64 {
	if c.res == nil {
		return 0
	}
	return c.res.PerSecond(c.res.Ops())
}

// set is the flat-out cell's lab.Cell.Calibrate, for each calibration
// run.
func (c *calibration) set(res *metrics.Result) error {
	if res == nil || res.Ops() == 0 || res.Duration <= 0 {
		return errors.New("the flat-out run did no operation, so there is no rate to take shares of")
	}
	if res.PerSecond(res.Ops()) > c.rate() {
		c.res = res
	}
	return nil
}

// curveLoads are the loads of a workload's cells: its curve's shares, its
// SLO search, then flat out; one nil for a workload with neither.
func curveLoads(w plan.Workload) []*curveLoad {
	if len(w.Curve) == 0 && w.SLO == nil {
		return []*curveLoad{nil}
	}
	var out []*curveLoad
	for _, pct := range w.Curve {
		out = append(out, &curveLoad{pct: pct})
	}
	if w.SLO != nil {
		out = append(out, &curveLoad{search: &sloSearch{}})
	}
	return append(out, &curveLoad{})
}

// checkCurve refuses a curve on a kind that cannot be paced and one whose
// workload sets the pace itself.
func checkCurve(w plan.Workload) error {
	if len(w.Curve) == 0 && w.SLO == nil {
		return nil
	}
	what, at := "curve", w.CurvePos
	if len(w.Curve) == 0 {
		what, at = "slo", w.SLO.Pos
	}
	kind, err := lookupKind(w)
	if err != nil {
		return err
	}
	pacer, ok := kind.NewOptions().(workload.Pacer)
	if !ok {
		var can []string
		for _, k := range workload.Kinds() {
			if _, ok := k.NewOptions().(workload.Pacer); ok {
				can = append(can, k.Name)
			}
		}
		return at.Errorf("workload %q: %s: a %s workload runs on no schedule to set a rate of; a %s is for %s", w.Name, what, w.Kind, what, strings.Join(can, ", "))
	}
	key := pacer.PaceKey()
	if v, ok := w.Fields[key]; ok {
		return v.KeyPos.Errorf("workload %q: %s.%s: the %s sets the rate of each load (a share of the flat-out rate); leave %s out", w.Name, w.Kind, key, what, key)
	}
	for _, ax := range w.Matrix {
		if ax.Field == key {
			return ax.Values[0].KeyPos.Errorf("workload %q: matrix.%s: the %s sets the rate of each load; leave %s out", w.Name, key, what, key)
		}
	}
	return nil
}

// uncalibrated is the error of a curve's cell prepared before its
// flat-out cell's calibration succeeded.
func uncalibrated(c *cellBuilder) error {
	return fmt.Errorf("workload %q at %s: its rate is a share of the flat-out rate, and the flat-out run that measures it (its calibration) did not succeed", c.w.Name, c.load.name())
}
