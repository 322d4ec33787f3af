package cli

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/experiment"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/variant"
)

// calibrate runs the plan's baseline against itself — an A/A of every
// cell, in interleaved rounds like the experiment — and says, before hours
// are spent, how noisy this machine is for this plan: what the plan's
// rounds can detect, and how many rounds a given difference needs. The
// run is stored as an experiment of its own.
func calibrate(ctx context.Context, p *plan.Plan, o ExperimentOptions, st *store.Store, runDir, command string, seed uint64, text string, stdout, stderr io.Writer) error {
	only := *p
	for _, v := range p.Variants {
		if v.Name == p.Baseline {
			only.Variants = []plan.Variant{v}
		}
	}
	progress := newProgress(stderr, 0, o.Output.Quiet)
	defer progress.Close()
	variants, _, err := experiment.PrepareVariants(ctx, &only, nil, runDir, false, progress.Above(stderr), progress)
	defer func() {
		for _, v := range variants {
			_ = v.Close()
		}
	}()
	if err != nil {
		return err
	}
	// The same variant twice, each cell built twice: two copies that must
	// compare as equal.
	a, err := experiment.Cells(&only, variants, segment.Whole)
	if err != nil {
		return &UsageError{Err: err}
	}
	b, err := experiment.Cells(&only, []*variant.Variant{variants[0]}, segment.Whole)
	if err != nil {
		return &UsageError{Err: err}
	}
	again := p.Baseline + " again"
	for i := range b {
		b[i].Variant = again
	}
	cells := append(a, b...)
	sp := store.PlanRecord{Path: p.Path, Text: text, Baseline: p.Baseline, Threshold: p.Threshold, Order: lab.OrderRandom, Seed: seed}
	lp := lab.Plan{Name: p.Name + " calibration", Command: command + " --calibrate", Rounds: o.CalibrateRounds, Warmup: p.Warmup,
		Cooldown: p.Cooldown, Seed: seed, Order: lab.OrderRandom, Settings: sp,
		BeforeRound: experiment.RoundHook(p, "before_round", p.Hooks.BeforeRound), AfterRound: experiment.RoundHook(p, "after_round", p.Hooks.AfterRound)}
	fmt.Fprintf(stderr, "iolab: %s: calibrating: %s against itself, %d cells x (%d warm-up + %d rounds)\n",
		p.Name, p.Baseline, len(a), p.Warmup, o.CalibrateRounds)
	id, runErr := newRunner(st, o.Output.StoreGrace, stderr, progress).Run(ctx, lp, cells)
	if id == "" {
		return runErr
	}
	data, err := st.Load(context.WithoutCancel(ctx), id)
	if err != nil {
		return err
	}
	rep := analysis.Build(data, analysis.Options{Baseline: p.Baseline, Threshold: p.Threshold, Order: lab.OrderRandom})
	// The plan's own family: every primary comparison it will make.
	family := max(1, len(a)*(len(p.Variants)-1))
	fmt.Fprintf(stdout, "calibration of %s: %s against itself, %d rounds (stored as experiment %s)\n\n", p.Name, p.Baseline, o.CalibrateRounds, id)
	t := &report.Table{Header: []string{"cell", "metric", "A/A ratio [95% CI]", "noise per round",
		fmt.Sprintf("MDE at the plan's %d rounds", p.Rounds), "rounds for 5%", "rounds for 10%", fmt.Sprintf("rounds for %.0f%%", 100*2*p.Threshold)}}
	for _, c := range rep.Comparisons {
		if !c.Primary {
			continue
		}
		rounds := func(effect float64) string {
			n := c.RoundsFor(effect, family)
			if n < 0 {
				return fmt.Sprintf("> %d", 100*c.N)
			}
			return fmt.Sprint(n)
		}
		noise := "—"
		if c.Method == stats.MethodRatio {
			noise = fmt.Sprintf("%.1f%%", 100*math.Expm1(c.RoundSD()))
		}
		t.Add(c.Cell, c.Metric, fmt.Sprintf("%.3f [%.3f, %.3f]", c.Ratio, c.CI95[0], c.CI95[1]), noise,
			fmt.Sprintf("%.1f%%", 100*c.MDEAt(p.Rounds, family)), rounds(0.05), rounds(0.10), rounds(2*p.Threshold))
	}
	if err := t.Render(stdout, o.Output.Format == "md"); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nnoise per round: the spread of one round's ratio of two runs of the same thing; MDE and rounds for the plan's %d primary comparisons (Holm), threshold ±%.0f%%, 80%% probability; an A/A interval far from 1 means the order of runs matters here (a slot effect) or the machine changed during the calibration\n",
		family, 100*p.Threshold)
	return runErr
}
