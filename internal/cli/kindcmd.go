package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/variant"
	"github.com/iolab/iolab/internal/workload"
)

// kindCommands are a command for every registered workload kind that has
// no command of its own: its options as flags, the repeat flags, one cell
// in rounds — so a kind registered anywhere runs from the command line as
// it runs in a plan.
func kindCommands(root *cobra.Command, stdout, stderr io.Writer) []*cobra.Command {
	var out []*cobra.Command
	for _, kind := range workload.Kinds() {
		if slices.ContainsFunc(root.Commands(), func(c *cobra.Command) bool { return c.Name() == kind.Name }) {
			continue
		}
		out = append(out, newKindCommand(kind, stdout, stderr))
	}
	return out
}

func newKindCommand(kind workload.Kind, stdout, stderr io.Writer) *cobra.Command {
	opts := kind.NewOptions()
	var repeat RepeatOptions
	var variants argVariants
	cmd := &cobra.Command{
		Use:   kind.Name,
		Short: strings.ToUpper(kind.Short[:1]) + kind.Short[1:] + ", repeated in rounds and stored",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return variants.run(cmd, kind, args, repeat, stdout, stderr)
			}
			if err := variants.withoutArguments(cmd, kind); err != nil {
				return err
			}
			return runKind(cmd.Context(), kind, opts, repeat, commandLine(cmd), stdout, stderr)
		},
	}
	own := pflag.NewFlagSet(kind.Name, pflag.ContinueOnError)
	opts.AddFlags(own)
	cmd.Flags().AddFlagSet(own)
	repeat.AddFlags(cmd.Flags(), kind.Splits)
	if kind.OutputMetrics {
		repeat.addShowOutputFlag(cmd.Flags())
	}
	if kind.Arguments != "" {
		variants.addFlags(cmd, kind)
	}
	return cmd
}

// runKind runs one workload of a kind as an experiment of one cell.
func runKind(ctx context.Context, kind workload.Kind, opts workload.Options, repeat RepeatOptions, command string, stdout, stderr io.Writer) error {
	if err := repeat.validate(); err != nil {
		return err
	}
	if err := checkSplits(kind, repeat); err != nil {
		return err
	}
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	w, target, err := opts.Build(workload.Build{Dir: dir, Env: os.Environ(), Segment: repeat.Segment, Show: repeat.showTo(stderr)})
	if err != nil {
		return &UsageError{Err: fmt.Errorf("%s: %w", kind.Name, err)}
	}
	cells := []lab.Cell{{Name: kind.Name, Workload: w, Target: target}}
	plan := lab.Plan{Name: kind.Name, Command: command, Settings: w.Params()}
	return runExperiment(ctx, repeat, plan, cells, 0, stdout, stderr)
}

// checkSplits refuses --segment on a kind that does not split its load.
func checkSplits(kind workload.Kind, repeat RepeatOptions) error {
	if repeat.Segment.Split() && !kind.Splits {
		return usage("--segment %s: %s does not split its load (%s do); each segment would run all of it", repeat.Segment, kind.Name, strings.Join(workload.SplittingKinds(), ", "))
	}
	return nil
}

// runExperiment runs the cells, then prints the stored experiment's report
// — also when it was interrupted or failed, so what finished is shown.
func runExperiment(ctx context.Context, o RepeatOptions, plan lab.Plan, cells []lab.Cell, runTime time.Duration, stdout, stderr io.Writer) error {
	var kinds []string
	for _, c := range cells {
		kinds = append(kinds, c.Workload.Kind())
	}
	if err := o.Gates.ForKinds(kinds); err != nil {
		return err
	}
	st, err := openStore(ctx, o.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	plan.LatencyLog, plan.LatencyLogFio = o.LatencyLog, o.LatencyLogFormat == metrics.LatencyLogFio
	o.segmentPlan(&plan)
	if !o.Segment.Split() {
		plan.StartAt, plan.Every = o.StartAt, o.Every
	}
	plan.Rounds, plan.Warmup, plan.Cooldown, plan.Seed, plan.KeepGoing = o.Rounds, o.Warmup, o.Cooldown, o.Seed, o.KeepGoing
	if o.ObservePID != "" {
		pid, err := variant.CheckPID(o.ObservePID)
		if err != nil {
			return usage("--observe-pid %v", err)
		}
		for i := range cells {
			cells[i].Around = variant.PIDObserver{PID: pid}
		}
	}
	id, runErr := newRunner(st, o.StoreGrace, stderr, newProgress(stderr, runTime, o.Quiet)).Run(ctx, plan, cells)
	if err := noteOn(ctx, st, id, o.Note); err != nil {
		return errors.Join(runErr, err)
	}
	if id == "" {
		return runErr
	}
	// A segment reports, and judges its gates on, the whole load (every
	// segment has ended by now): its exit code says whether the load
	// passed, the same in every segment.
	o.mergeSegments = o.Segment.Split() && o.Every == 0 // a store of its own (--every) holds this segment alone
	if err := printExperiment(context.WithoutCancel(ctx), st, id, o, stdout, stderr); err != nil {
		return errors.Join(runErr, err)
	}
	return runErr
}
