package cli

import (
	"context"
	"io"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/experiment"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/store"
)

// calibrate runs the plan's baseline against itself (experiment.Calibrate)
// and says, before hours are spent, how noisy this machine is for this
// plan: what the plan's rounds can detect, and how many rounds a given
// difference needs.
func calibrate(ctx context.Context, spec experiment.Spec, o ExperimentOptions, st *store.Store, stdout, stderr io.Writer) error {
	p := spec.Plan
	progress := newProgress(stderr, 0, o.Output.Quiet)
	defer progress.Close()
	id, cells, runErr := experiment.Calibrate(ctx, st, newRunner(st, o.Output.StoreGrace, stderr, progress), spec, o.CalibrateRounds)
	if id == "" {
		return runErr
	}
	data, err := st.Load(context.WithoutCancel(ctx), id)
	if err != nil {
		return err
	}
	rep := analysis.Build(data, analysis.Options{Baseline: p.Baseline, Threshold: p.Threshold, Order: lab.OrderRandom})
	of := report.CalibrationOf{Plan: p.Name, Baseline: p.Baseline, Rounds: o.CalibrateRounds, PlanRounds: p.Rounds,
		Family: max(1, cells*(len(p.Variants)-1)), Threshold: p.Threshold} // the plan's own family: every primary comparison it will make
	if err := report.Calibration(stdout, rep, of, o.Output.Format == "md"); err != nil {
		return err
	}
	return runErr
}
