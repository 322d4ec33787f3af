package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/cgroup"
	"github.com/iolab/iolab/internal/experiment"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/scratch"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/variant"
)

// ExperimentOptions are the flags of `iolab experiment PLAN.yaml`.
type ExperimentOptions struct {
	Output    RepeatOptions // db, json, format, series
	Order     string
	Resume    bool
	KeepGoing bool
	// Calibrate runs the baseline against itself instead of the plan.
	Calibrate       bool
	CalibrateRounds int
	// UntilDecided stops after any round from the plan's rounds on at
	// which every primary comparison is decided, at most MaxRounds.
	UntilDecided bool
	MaxRounds    int
	// Ports confines the ports of variants' servers (over the plan's
	// ports:).
	Ports string
	// step, when set, runs the plan as a step of a bisect.
	step *bisectStep
}

// bisectStep is what a bisect asks of one step's experiment
// (experiment.Step), and its ID, once stored, in id.
type bisectStep struct {
	experiment.Step
	id string
}

func newExperimentCommand(stdout, stderr io.Writer) *cobra.Command {
	var o ExperimentOptions
	cmd := &cobra.Command{
		Use:   "experiment PLAN.yaml",
		Short: "Compare variants (git refs, builds, configs) in randomized interleaved rounds",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExperimentPlan(cmd.Context(), args[0], o, commandLine(cmd)+" "+args[0], stdout, stderr)
		},
	}
	f := cmd.Flags()
	o.Output.addOutputFlags(f)
	o.Output.addSegmentFlags(f)
	o.Output.addShowOutputFlag(f)
	f.StringVar(&o.Order, "order", "", "random (default) or sequential (legacy: each variant's rounds back to back; warned about)")
	f.BoolVar(&o.Resume, "resume", false, "continue the newest unfinished experiment of this plan: finished runs are kept, not repeated")
	f.BoolVar(&o.KeepGoing, "keep-going", false, "record failed runs and variants that do not build, and go on")
	f.BoolVar(&o.Calibrate, "calibrate", false, "before a long experiment: run the baseline against itself for a few rounds and say how noisy this machine is, what the plan's rounds can detect and how many rounds a given difference needs (nothing else runs)")
	flagval.IntVar(f, &o.CalibrateRounds, "calibrate-rounds", 6, stats.MinPairs, plan.MaxRounds, "rounds of the --calibrate run")
	f.BoolVar(&o.UntilDecided, "until-decided", false, "run the plan's rounds, then add rounds until every primary comparison is decided, at most --max-rounds; "+
		"verdicts come from a confidence sequence that stays valid however often it is looked at (as the plan's rounds: {min: 6, max: 60})")
	f.StringVar(&o.Ports, "ports", "", "ports to hand variants' servers as {{port}}, such as 25000-25999 (over the plan's ports:; default: any free port)")
	flagval.IntVar(f, &o.MaxRounds, "max-rounds", 0, plan.MinSequentialRounds, plan.MaxRounds, "the most rounds --until-decided runs (default 10 times the plan's rounds, at least 60)")
	return cmd
}

func runExperimentPlan(ctx context.Context, path string, o ExperimentOptions, command string, stdout, stderr io.Writer) error {
	if err := o.Output.validateOutput(); err != nil {
		return err
	}
	text, err := plan.ReadFile(path)
	if err != nil {
		return usage("%s: %v", path, err)
	}
	return runPlanText(ctx, path, text, o, command, stdout, stderr)
}

// runPlanText runs a plan's text, read from path (or made by a command
// from its flags: path then names the command).
func runPlanText(ctx context.Context, path string, text []byte, o ExperimentOptions, command string, stdout, stderr io.Writer) error {
	p, err := plan.Parse(path, text)
	if err != nil {
		return &UsageError{Err: err}
	}
	if err := applyFlags(p, path, &o); err != nil {
		return err
	}
	var kinds []string
	for _, w := range p.Workloads {
		kinds = append(kinds, w.Kind)
	}
	if err := o.Output.Gates.ForKinds(kinds); err != nil {
		return err
	}
	cache, err := variant.DefaultCache()
	if err != nil {
		return usage("%v", err)
	}
	// Redacting registers the plan's secrets (env: API_TOKEN, bearer: ...)
	// before any variant builds and could print one.
	stored := plan.Redact(text)
	st, err := openStore(ctx, o.Output.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	resume, seed, err := resumeOrSeed(ctx, st, p, stored, o)
	if err != nil {
		return err
	}
	// Groups a killed iolab left (its limits) go before new ones come,
	// and so do its worktrees and builds.
	cgroup.RemoveStale()
	scratch.RemoveStale("", "experiment")
	runDir, err := scratch.Dir("", "experiment")
	if err != nil {
		return err
	}
	defer os.RemoveAll(runDir)
	spec := experiment.Spec{Path: path, Plan: p, Stored: stored, Command: command, Seed: seed, Resume: resume,
		KeepGoing: o.KeepGoing, RunDir: runDir, Segment: lab.Plan{Command: command}, ShowOutput: o.Output.showTo(stderr), Cache: cache}
	if o.Calibrate {
		return calibrate(ctx, spec, o, st, stdout, stderr)
	}
	progress := newProgress(stderr, 0, o.Output.Quiet)
	defer progress.Close()
	o.Output.segmentPlan(&spec.Segment)
	if !o.Output.Segment.Split() {
		spec.Segment.StartAt, spec.Segment.Every = o.Output.StartAt, o.Output.Every
	}
	if o.step != nil {
		spec.Step = &o.step.Step
	}
	id, skipped, runErr := experiment.Run(ctx, st, newRunner(st, o.Output.StoreGrace, stderr, progress), spec)
	if id == "" {
		return runErr
	}
	if o.step != nil {
		o.step.id = id
	}
	if err := noteOn(ctx, st, id, o.Output.Note); err != nil {
		return errors.Join(runErr, err)
	}
	o.Output.mergeSegments = o.Output.Segment.Split() && o.Output.Every == 0 // the whole load, as runExperiment
	if err := printExperiment(context.WithoutCancel(ctx), st, id, o.Output, stdout, stderr); err != nil {
		return errors.Join(runErr, err)
	}
	if len(skipped) > 0 && runErr == nil {
		runErr = fmt.Errorf("%d variants did not build and were left out (--keep-going)", len(skipped))
	}
	return runErr
}

// resumeOrSeed is the experiment --resume continues (its ID, the plan's
// rounds and seed as it began: the schedule continues exactly, and stops
// when decided as it began), or, for a new one, the plan's seed or one
// from the clock.
func resumeOrSeed(ctx context.Context, st *store.Store, p *plan.Plan, stored string, o ExperimentOptions) (resume string, seed uint64, err error) {
	if !o.Resume {
		if p.Seed != 0 {
			return "", p.Seed, nil
		}
		return "", uint64(time.Now().UnixNano()), nil
	}
	resume, sp, err := experiment.Resumable(ctx, st, p, stored, o.Output.Segment)
	if err != nil {
		return "", 0, err
	}
	if sp.Sequential != nil {
		p.MinRounds, p.Rounds = sp.Sequential.Min, sp.Sequential.Max
	}
	return resume, sp.Seed, nil
}
