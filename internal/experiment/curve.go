package experiment

import (
	"errors"
	"fmt"
	"strings"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/workload"
)

// A workload with a curve (vdbench's curve=) is a cell per load: one flat
// out, at the depth its keys give, whose first run — its calibration —
// measures the rate the others run at shares of, on a schedule. The
// flat-out cell runs in the rounds too: it is the curve's last point.

// curveLoad is a cell's point on its workload's curve.
type curveLoad struct {
	pct  float64 // percent of the flat-out rate; 0 for the flat-out cell
	flat *calibration
}

func (l *curveLoad) flatOut() bool { return l.pct == 0 }

// name is the load as a cell's name and parameters show it.
func (l *curveLoad) name() string {
	if l.flatOut() {
		return plan.LoadMax
	}
	return plan.CurveLoad(l.pct)
}

// calibration is what a variant's flat-out cell of one matrix point
// measured in its calibration run: the rate the curve's other cells run
// at shares of.
type calibration struct{ res *metrics.Result }

// set is the flat-out cell's lab.Cell.Calibrate.
func (c *calibration) set(res *metrics.Result) error {
	if res == nil || res.Ops() == 0 || res.Duration <= 0 {
		return errors.New("the flat-out run did no operation, so there is no rate to take shares of")
	}
	c.res = res
	return nil
}

// curveLoads are the loads of a workload's cells: its curve's shares,
// then flat out; one nil (no curve) for a workload without one.
func curveLoads(w plan.Workload) []*curveLoad {
	if len(w.Curve) == 0 {
		return []*curveLoad{nil}
	}
	var out []*curveLoad
	for _, pct := range w.Curve {
		out = append(out, &curveLoad{pct: pct})
	}
	return append(out, &curveLoad{})
}

// checkCurve refuses a curve on a kind that cannot be paced, one whose
// workload sets the pace itself, and one run in segments.
func checkCurve(w plan.Workload, seg segment.Segment) error {
	if len(w.Curve) == 0 {
		return nil
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
		return w.CurvePos.Errorf("workload %q: curve: a %s workload runs on no schedule to set a rate of; a curve is for %s", w.Name, w.Kind, strings.Join(can, ", "))
	}
	key := pacer.PaceKey()
	if v, ok := w.Fields[key]; ok {
		return v.KeyPos.Errorf("workload %q: %s.%s: the curve sets the rate of each load (a share of the flat-out rate); leave %s out", w.Name, w.Kind, key, key)
	}
	for _, ax := range w.Matrix {
		if ax.Field == key {
			return ax.Values[0].KeyPos.Errorf("workload %q: matrix.%s: the curve sets the rate of each load; leave %s out", w.Name, key, key)
		}
	}
	if seg.Split() {
		return w.CurvePos.Errorf("workload %q: curve: not in segments yet (--segment %s): each segment would pace at shares of its own flat-out rate; run the curve from one host", w.Name, seg)
	}
	return nil
}

// uncalibrated is the error of a curve's cell prepared before its
// flat-out cell's calibration succeeded.
func uncalibrated(c *cellBuilder) error {
	return fmt.Errorf("workload %q at %s: its rate is a share of the flat-out rate, and the flat-out run that measures it (its calibration) did not succeed", c.w.Name, c.load.name())
}
