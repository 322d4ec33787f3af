package experiment

import (
	"context"
	"fmt"

	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/variant"
)

// AgainSuffix names the baseline's second copy in a calibration.
const AgainSuffix = " again"

// Calibrate runs the plan's baseline against itself — an A/A of every
// cell, in interleaved random rounds like the experiment, each cell built
// twice: two copies that must compare as equal — and stores it as an
// experiment of its own. It returns that experiment's ID ("" when nothing
// was stored), how many cells one copy has, and what stopped it.
func Calibrate(ctx context.Context, st *store.Store, runner *lab.Runner, s Spec, rounds int) (id string, cells int, err error) {
	p := s.Plan
	only := *p
	for _, v := range p.Variants {
		if v.Name == p.Baseline {
			only.Variants = []plan.Variant{v}
		}
	}
	variants, _, err := PrepareVariants(ctx, &only, nil, s.Cache, s.RunDir, false, runner.Notices, runner.Progress)
	defer func() {
		for _, v := range variants {
			_ = v.Close()
		}
	}()
	if err != nil {
		return "", 0, err
	}
	a, err := Cells(&only, variants, segment.Whole, nil)
	if err != nil {
		return "", 0, &badinput.Error{Err: err}
	}
	b, err := Cells(&only, []*variant.Variant{variants[0]}, segment.Whole, nil)
	if err != nil {
		return "", 0, &badinput.Error{Err: err}
	}
	for i := range b {
		b[i].Variant = p.Baseline + AgainSuffix
	}
	sp := store.PlanRecord{Path: p.Path, Text: s.Stored, Baseline: p.Baseline, Threshold: p.Threshold, Order: lab.OrderRandom, Seed: s.Seed}
	lp := lab.Plan{Name: p.Name + " calibration", Command: s.Command + " --calibrate", Rounds: rounds, Warmup: p.Warmup,
		Cooldown: p.Cooldown, Seed: s.Seed, Order: lab.OrderRandom, Settings: sp,
		BeforeRound: RoundHook(p, "before_round", p.Hooks.BeforeRound), AfterRound: RoundHook(p, "after_round", p.Hooks.AfterRound)}
	if runner.Notices != nil {
		fmt.Fprintf(runner.Notices, "iolab: %s: calibrating: %s against itself, %d cells x (%d warm-up + %d rounds)\n",
			p.Name, p.Baseline, len(a), p.Warmup, rounds)
	}
	id, err = runner.Run(ctx, lp, append(a, b...))
	return id, len(a), err
}
