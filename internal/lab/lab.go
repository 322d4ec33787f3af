// Package lab runs an experiment: it prepares every cell, then repeats them
// in rounds — warm-up rounds first, stored and labelled, then measured
// rounds — each round running every cell once in a fresh seeded random
// order, with a cooldown between runs and an environment snapshot before and
// after each round. Every run is written to the store the moment it ends, so
// an interrupted experiment keeps all it finished; the run cut short is
// stored as interrupted, never as a good result.
package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/iolab/iolab/internal/envinfo"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/workload"
)

// Cell is one workload to repeat.
type Cell struct {
	Name     string
	Workload workload.Workload
	// Target is the path under test, for environment snapshots.
	Target string
}

// Plan says how to repeat the cells.
type Plan struct {
	Name     string
	Command  string // the command line, for the record
	Rounds   int
	Warmup   int
	Cooldown time.Duration
	Seed     uint64
	// Settings is stored as the experiment's plan, for show and resume.
	Settings any
}

// ErrInterrupted is returned when the experiment was cancelled; what
// finished is stored.
var ErrInterrupted = errors.New("interrupted; finished runs are stored")

// Runner runs plans against a store.
type Runner struct {
	Store *store.Store
	// Progress receives live progress; nil for none.
	Progress *Progress
}

// Run prepares the cells, runs the plan and returns the experiment's ID.
// Preparation errors (bad target, missing tool) are returned before
// anything is stored.
func (r *Runner) Run(ctx context.Context, plan Plan, cells []Cell) (string, error) {
	defer func() {
		for _, c := range cells {
			_ = c.Workload.Close()
		}
	}()
	for _, c := range cells {
		if err := c.Workload.Prepare(ctx); err != nil {
			if ctx.Err() != nil {
				return "", ErrInterrupted
			}
			return "", err
		}
	}
	exp, stored, err := r.create(ctx, plan, cells)
	if err != nil {
		return "", err
	}
	err = r.rounds(ctx, plan, exp.ID, cells, stored)
	status := "done"
	switch {
	case errors.Is(err, ErrInterrupted):
		status = store.StatusInterrupted
	case err != nil:
		status = store.StatusFailed
	}
	if ferr := r.Store.FinishExperiment(context.WithoutCancel(ctx), exp.ID, status); ferr != nil && err == nil {
		err = ferr
	}
	return exp.ID, err
}

func (r *Runner) create(ctx context.Context, plan Plan, cells []Cell) (*store.Experiment, []store.Cell, error) {
	settings, err := json.Marshal(plan.Settings)
	if err != nil {
		return nil, nil, fmt.Errorf("encode plan: %w", err)
	}
	now := time.Now()
	exp := &store.Experiment{
		ID:   fmt.Sprintf("%s-%04x", now.UTC().Format("20060102-150405"), rand.N(1<<16)),
		Name: plan.Name, Command: plan.Command, Plan: settings, CreatedAt: now, Status: "running",
	}
	stored := make([]store.Cell, len(cells))
	for i, c := range cells {
		stored[i] = store.Cell{Index: i, Name: c.Name, Workload: c.Workload.Kind(), Params: c.Workload.Params()}
	}
	if err := r.Store.CreateExperiment(ctx, exp, stored); err != nil {
		return nil, nil, err
	}
	return exp, stored, nil
}

func (r *Runner) rounds(ctx context.Context, plan Plan, expID string, cells []Cell, stored []store.Cell) error {
	rng := rand.New(rand.NewPCG(plan.Seed, 0x1ab))
	total := (plan.Warmup + plan.Rounds) * len(cells)
	done := 0
	for i := 0; i < plan.Warmup+plan.Rounds; i++ {
		warmup := i < plan.Warmup
		round := i
		if !warmup {
			round -= plan.Warmup
		}
		if err := r.snapshot(ctx, expID, round, warmup, "before", cells); err != nil {
			return err
		}
		for slot, ci := range rng.Perm(len(cells)) {
			if done > 0 && plan.Cooldown > 0 {
				select {
				case <-time.After(plan.Cooldown):
				case <-ctx.Done():
					return ErrInterrupted
				}
			}
			if ctx.Err() != nil {
				return ErrInterrupted
			}
			run := &store.Run{CellID: stored[ci].ID, Round: round, Slot: slot, Warmup: warmup}
			err := r.runOne(ctx, expID, cells[ci], run, RunPosition{Round: round, Rounds: plan.Rounds, Warmup: warmup, Done: done, Total: total})
			done++
			if err != nil {
				return err
			}
		}
		if err := r.snapshot(ctx, expID, round, warmup, "after", cells); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) runOne(ctx context.Context, expID string, c Cell, run *store.Run, pos RunPosition) error {
	var progress func(ops, bytes int64)
	if r.Progress != nil {
		progress = r.Progress.Start(c.Name, pos)
		defer r.Progress.End()
	}
	res, err := c.Workload.Run(ctx, progress)
	run.EndedAt = time.Now()
	run.Result = res
	switch {
	case err != nil && ctx.Err() != nil:
		run.Status = store.StatusInterrupted
	case err != nil:
		run.Status, run.Error = store.StatusFailed, err.Error()
	case res.Errors > 0:
		run.Status, run.Error = store.StatusFailed, res.FirstError
	default:
		run.Status = store.StatusOK
	}
	if res == nil { // the run produced nothing, but its failure is a fact to keep
		res = &metrics.Result{Start: run.EndedAt}
		run.Result = res
	}
	if err := r.Store.SaveRun(ctx, expID, run, report.RunMetrics(res)); err != nil {
		return err
	}
	switch run.Status {
	case store.StatusInterrupted:
		return ErrInterrupted
	case store.StatusFailed:
		return fmt.Errorf("%s: %s", c.Name, run.Error)
	}
	return nil
}

// snapshot stores the environment of every distinct target of the cells.
func (r *Runner) snapshot(ctx context.Context, expID string, round int, warmup bool, phase string, cells []Cell) error {
	if warmup {
		phase = "warmup-" + phase
	}
	seen := map[string]bool{}
	for _, c := range cells {
		if seen[c.Target] {
			continue
		}
		seen[c.Target] = true
		snap := envinfo.Capture(c.Target)
		b, err := json.Marshal(snap)
		if err != nil {
			return fmt.Errorf("encode environment: %w", err)
		}
		if err := r.Store.SaveEnv(ctx, expID, store.EnvSnapshot{Round: round, Phase: phase, TakenAt: snap.TakenAt, Snapshot: b}); err != nil {
			return err
		}
	}
	return nil
}
