package lab

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/workload"
)

// execute runs the schedule's entries that are not done yet.
func (r *Runner) execute(ctx context.Context, plan Plan, expID string, cells []Cell, stored []store.Cell, done map[runKey]bool) error {
	entries := scheduleCells(plan, cells)
	prepared := map[int]bool{}
	steady := false // the precondition was met: no more warm-up rounds
	if plan.Preconditioned != nil && plan.Resume != "" {
		var err error
		if steady, err = plan.Preconditioned(ctx, expID); err != nil {
			return err
		}
	}
	var failed, gated []error
	ran, total := 0, 0
	for _, e := range entries {
		if !done[runKey{e.Cell, e.Warmup, e.Round}] {
			total++
		}
	}
	for i, e := range entries {
		if skipped(e, cells, done, steady) {
			continue
		}
		firstOfBlock := i == 0 || entries[i-1].Block != e.Block
		lastOfBlock := i == len(entries)-1 || entries[i+1].Block != e.Block
		if firstOfBlock {
			if err := r.beginBlock(ctx, plan, expID, e, cells); err != nil {
				return err
			}
		}
		if err := r.waitTurn(ctx, plan, i, ran > 0); err != nil {
			return err
		}
		c := cells[e.Cell]
		if c.Calibrated && !c.PerStart && !prepared[e.Cell] {
			if err := r.prepareCalibrated(ctx, c); err != nil {
				return err
			}
			prepared[e.Cell] = true
		}
		run := &store.Run{CellID: stored[e.Cell].ID, Round: e.Round, Slot: e.Slot, Warmup: e.Warmup}
		round := max(e.Round, 0) // a variant's own warm-up runs count as round 0
		if !e.Warmup {
			round += plan.Warmup
		}
		rctx := workload.WithRunInfo(ctx, workload.RunInfo{Run: i, Round: round})
		err := r.runOne(rctx, expID, c, run, RunPosition{Round: e.Round, Rounds: max(plan.Rounds, c.Rounds), Warmup: e.Warmup, Done: ran, Total: total, Variant: c.Variant})
		ran++
		var gate *gateError
		switch {
		case errors.As(err, &gate):
			gated = append(gated, err)
		case errors.Is(err, ErrInterrupted):
			return err
		case errors.As(err, new(*findingError)):
			// What the run measured, not a failure of the experiment.
		case err != nil && !plan.KeepGoing:
			return err
		case err != nil:
			failed = append(failed, err)
		}
		if err := r.wholeRun(ctx, plan, e.Cell, c, e.Warmup, e.Round); err != nil {
			return err
		}
		if lastOfBlock {
			stop, err := r.afterBlock(ctx, plan, expID, e, cells, &steady)
			if err != nil {
				return err
			}
			if stop {
				break
			}
		}
	}
	return keptGoing(failed, gated)
}

// keptGoing is what the runs that failed (--keep-going) or failed their
// gate say once every run has ended.
func keptGoing(failed, gated []error) error {
	if len(failed) > 0 {
		return fmt.Errorf("%d runs failed (kept going); the first: %w", len(failed), failed[0])
	}
	if len(gated) > 0 {
		return fmt.Errorf("%d runs failed their gate; the first: %w", len(gated), gated[0])
	}
	return nil
}

// skipped says whether entry e does not run: it ran before (a resume),
// its cell's search has ended, or it is a warm-up round the precondition
// (steady) made needless.
func skipped(e Entry, cells []Cell, done map[runKey]bool, steady bool) bool {
	if done[runKey{e.Cell, e.Warmup, e.Round}] {
		return true
	}
	if d := cells[e.Cell].Done; d != nil && d() {
		return true
	}
	return steady && e.Warmup && e.Round >= 0
}

// waitTurn waits for run i's turn: a cooldown after a run, the run's slot
// by the clock (--run-every), or, in segments, the barrier every
// segment's run i starts at.
func (r *Runner) waitTurn(ctx context.Context, plan Plan, i int, afterRun bool) error {
	if afterRun && plan.Cooldown > 0 {
		r.Progress.Phase(fmt.Sprintf("cooling down %v", plan.Cooldown))
		select {
		case <-time.After(plan.Cooldown):
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	switch {
	case i > 0 && plan.Every > 0:
		// In step by the clock: entry i's slot (at once if it passed).
		select {
		case <-time.After(time.Until(plan.StartAt.Add(time.Duration(i) * plan.Every))):
		case <-ctx.Done():
			return ErrInterrupted
		}
	case i > 0 && plan.Segment.Split():
		// Every run after the first at a barrier of its own, a resumed
		// segment's too: run i of every segment measures the same
		// seconds. (A run cut by its runner's death is redone alone,
		// past its barrier; the merge calls it partial.)
		return r.meetBeforeRun(ctx, plan, i)
	}
	return nil
}

// prepareCalibrated prepares a cell whose rate its calibration set, before
// its first run.
func (r *Runner) prepareCalibrated(ctx context.Context, c Cell) error {
	r.Progress.Phase("preparing " + c.Name + " at the rate its calibration set")
	if err := c.Workload.Prepare(ctx); err != nil {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		return fmt.Errorf("%s/%s: %w", c.Variant, c.Name, err)
	}
	return nil
}

// afterBlock ends a block of runs (e its last) and judges what is judged
// after one: whether the precondition is met (steady), whether the
// experiment is decided (stop). In segments, judged on the whole load,
// once every segment stored its block: every segment judges it alike.
func (r *Runner) afterBlock(ctx context.Context, plan Plan, expID string, e Entry, cells []Cell, steady *bool) (stop bool, err error) {
	if err := r.endBlock(ctx, plan, expID, e, cells); err != nil {
		return false, err
	}
	preconditioning := plan.Preconditioned != nil && e.Warmup && e.Round >= 0 && !*steady
	if (preconditioning || decides(plan, e)) && plan.Segment.Split() {
		if _, err := r.meet(ctx, plan, fmt.Sprintf("%s judged block %d", plan.SegmentGroup, e.Block), 0); err != nil {
			return false, err
		}
	}
	if preconditioning {
		if *steady, err = plan.Preconditioned(ctx, expID); err != nil {
			return false, err
		}
	}
	return r.decided(ctx, plan, expID, e)
}

// decided says whether an experiment that stops when decided may stop
// after the round e ended.
func (r *Runner) decided(ctx context.Context, plan Plan, expID string, e Entry) (bool, error) {
	if !decides(plan, e) {
		return false, nil
	}
	return plan.Decided(ctx, expID)
}

// decides says whether the experiment may stop after the entry's block.
func decides(plan Plan, e Entry) bool {
	return plan.MinRounds > 0 && plan.Decided != nil && !e.Warmup && e.Round+1 >= plan.MinRounds && e.Round+1 < plan.Rounds
}

func (r *Runner) beginBlock(ctx context.Context, plan Plan, expID string, e Entry, cells []Cell) error {
	if err := r.snapshot(ctx, expID, e.Round, e.Warmup, "before", cells); err != nil {
		return err
	}
	if plan.BeforeRound != nil {
		return plan.BeforeRound(ctx)
	}
	return nil
}

func (r *Runner) endBlock(ctx context.Context, plan Plan, expID string, e Entry, cells []Cell) error {
	if plan.AfterRound != nil {
		if err := plan.AfterRound(ctx); err != nil {
			return err
		}
	}
	return r.snapshot(ctx, expID, e.Round, e.Warmup, "after", cells)
}
