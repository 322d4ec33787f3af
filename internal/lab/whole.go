package lab

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/store"
)

// In a load split into segments, what paces a curve's loads and what
// moves a search on is the whole load's run, not one segment's share of
// it: after a calibration or a search's run, each segment waits until
// every segment stored its run of that entry, and hands the cell's
// Calibrate or Ran the merge of them (metrics.MergeTogether) — the same
// figures in every segment, so every segment takes the same next step.

// judgesWhole says the entry's run is handed on merged with the other
// segments' (in a split load), not as this segment measured it.
func judgesWhole(plan Plan, c Cell, warmup bool, round int) bool {
	if !plan.Segment.Split() {
		return false
	}
	return (c.Calibrate != nil && store.IsCalibration(round)) || (c.Ran != nil && !warmup)
}

// wholeRun meets the other segments once all stored their run of the
// entry, merges the runs and hands the merge to the cell: its
// calibration, or its search's next step. A merge of runs one of which
// failed other than by its operations (a server that did not start) is
// not a step of the search, as on one host.
func (r *Runner) wholeRun(ctx context.Context, plan Plan, cell int, c Cell, warmup bool, round int) error {
	if !judgesWhole(plan, c, warmup, round) {
		return nil
	}
	point := fmt.Sprintf("%s merged cell %d round %d warmup %t", plan.SegmentGroup, cell, round, warmup)
	if _, err := r.meet(ctx, plan, point, 0); err != nil {
		return err
	}
	res, ok, counts, aligned, err := r.mergedRun(ctx, plan, cell, warmup, round)
	if err != nil {
		return err
	}
	if store.IsCalibration(round) {
		if !aligned {
			return nil // not one load's rate: the other calibration runs set it
		}
		if !ok {
			return fmt.Errorf("%s/%s: the calibration of the whole load failed in some segment, so there is no rate to take shares of", c.Variant, c.Name)
		}
		if err := c.Calibrate(res); err != nil {
			return fmt.Errorf("%s/%s: the calibration of the whole load: %w", c.Variant, c.Name, err)
		}
		return nil
	}
	if !counts {
		return nil
	}
	return c.Ran(res, ok)
}

// mergedRun reads every segment's run of an entry (each segment's latest
// experiment, its latest run of the entry) and merges them: ok when each
// succeeded; counts unless one failed other than by its operations;
// aligned unless their runs started further apart than one load's may
// (segment.Apart), when neither ok nor counts, as the report judges it.
func (r *Runner) mergedRun(ctx context.Context, plan Plan, cell int, warmup bool, round int) (res *metrics.Result, ok, counts, aligned bool, err error) {
	members, err := r.Store.Members(ctx, plan.SegmentGroup)
	if err != nil {
		return nil, false, false, false, err
	}
	latest := map[string]string{} // by segment: members come oldest first
	for _, m := range members {
		latest[m.Segment] = m.ID
	}
	var parts []*metrics.Result
	var starts []time.Time
	shortest := time.Duration(math.MaxInt64)
	ok, counts = true, true
	for i := range plan.Segment.N {
		seg := segment.Segment{I: i, N: plan.Segment.N}.String()
		id := latest[seg]
		if id == "" {
			return nil, false, false, false, fmt.Errorf("segment %s of %s stored no experiment", seg, plan.SegmentGroup)
		}
		d, err := r.Store.Load(ctx, id)
		if err != nil {
			return nil, false, false, false, err
		}
		run := entryRun(d, cell, warmup, round)
		if run == nil {
			return nil, false, false, false, fmt.Errorf("segment %s of %s stored no run of cell %d round %d, which the others ran", seg, plan.SegmentGroup, cell, round)
		}
		if run.Status != store.StatusOK {
			ok = false
			counts = counts && run.Result != nil && run.Result.Errors > 0
		}
		if run.Result != nil {
			parts = append(parts, run.Result)
			if run.Status == store.StatusOK && !run.Result.Start.IsZero() {
				starts = append(starts, run.Result.Start)
				shortest = min(shortest, run.Result.Duration)
			}
		}
	}
	if len(parts) == 0 {
		return nil, false, false, true, nil
	}
	if _, apart := segment.Apart(starts, shortest); apart {
		// Not one load's seconds (a run redone alone after its runner
		// died, one started past a barrier): as the report merges it, a
		// partial run, which no search step and no calibration counts.
		return metrics.MergeTogether(parts), false, false, false, nil
	}
	return metrics.MergeTogether(parts), ok, counts, true, nil
}

// entryRun is an experiment's latest finished run of an entry; nil if none.
func entryRun(d *store.Data, cell int, warmup bool, round int) *store.Run {
	var id int64 = -1
	for _, c := range d.Cells {
		if c.Index == cell {
			id = c.ID
		}
	}
	var out *store.Run
	for i, run := range d.Runs {
		if run.CellID != id || run.Warmup != warmup || run.Round != round {
			continue
		}
		if run.Status == store.StatusOK || run.Status == store.StatusFailed {
			out = &d.Runs[i]
		}
	}
	return out
}
