package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/cgroup"
	"github.com/iolab/iolab/internal/experiment"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/scratch"
	"github.com/iolab/iolab/internal/segment"
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

// bisectStep is what a bisect asks of one step's experiment: its
// variants' builds from builds, its record marked, its rounds stopped as
// soon as decide says, and its ID, once stored, in id.
type bisectStep struct {
	builds *variant.Builds
	record store.BisectRecord
	decide func(*store.Data) bool
	id     string
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
	if err := untilDecided(p, o); err != nil {
		return err
	}
	if o.Ports != "" {
		if p.Ports, err = plan.ParsePortRange(o.Ports); err != nil {
			return usage("--ports %v", err)
		}
	}
	if err := checkPlanSegment(p, &o); err != nil {
		return err
	}
	if err := lab.CheckRuns(p.Cells(), p.Warmup, p.Rounds); err != nil {
		return usage("%s: %v", path, err)
	}
	// Redacting registers the plan's secrets (env: API_TOKEN, bearer: ...)
	// before any variant builds and could print one.
	stored := plan.Redact(text)
	switch o.Order {
	case "":
	case lab.OrderRandom, lab.OrderSequential:
		p.Order = o.Order
	default:
		return usage("--order %q: want random or sequential", o.Order)
	}
	if p.MinRounds > 0 && p.Order == lab.OrderSequential {
		return usage("%s: stopping when decided (--until-decided, rounds: {min, max}) needs the random order: in sequential order a round is not every cell once", path)
	}
	st, err := openStore(ctx, o.Output.DB)
	if err != nil {
		return err
	}
	defer st.Close()
	resume, seed := "", p.Seed
	if o.Resume {
		var sp store.PlanRecord
		if resume, sp, err = findResumable(ctx, st, p, stored, o.Output.Segment); err != nil {
			return err
		}
		// The schedule continues exactly, and stops when decided as it
		// began.
		seed = sp.Seed
		if sp.Sequential != nil {
			p.MinRounds, p.Rounds = sp.Sequential.Min, sp.Sequential.Max
		}
	} else if seed == 0 {
		seed = uint64(time.Now().UnixNano())
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
	if o.Output.Every > 0 && o.Output.Segment.Split() && (p.Precondition != nil || slices.ContainsFunc(p.Workloads, func(w plan.Workload) bool { return len(w.Curve) > 0 || w.SLO != nil })) {
		// (Stopping when decided is refused in segments whatever the clock: splitError.)
		return usage("--run-every: a curve, a search, a precondition and stopping when decided judge the whole load as it runs, which segments meeting no barrier in a shared store cannot; leave --run-every out")
	}
	if o.Calibrate {
		return calibrate(ctx, p, o, st, runDir, command, seed, stored, stdout, stderr)
	}
	progress := newProgress(stderr, 0, o.Output.Quiet)
	defer progress.Close()
	var builds *variant.Builds
	if o.step != nil {
		builds = o.step.builds
	}
	variants, skipped, err := prepareVariants(ctx, p, builds, runDir, o.KeepGoing, stderr, progress)
	defer func() {
		for _, v := range variants {
			_ = v.Close()
		}
	}()
	if err != nil {
		return err
	}
	cells, err := experiment.Cells(p, variants, o.Output.Segment)
	if err != nil {
		return &UsageError{Err: err}
	}
	for _, w := range p.Workloads {
		if advice := w.ScaleAdvice(); advice != "" {
			fmt.Fprintf(stderr, "iolab: %s\n", advice)
		}
	}
	sp := store.PlanRecord{Path: path, Text: stored, Baseline: p.Baseline, Threshold: p.Threshold, Order: p.Order,
		Seed: seed, Commits: map[string]string{}, AutoWarmup: p.AutoWarmup, Extrapolate: store.Extrapolate(p.Extrapolate), Custom: map[string]bool{}}
	for _, w := range p.Workloads {
		for _, m := range w.Metrics {
			sp.Custom[m.Name] = m.LowerIsBetter
		}
	}
	if p.MinRounds > 0 {
		if len(variants) < 2 {
			return usage("%s: stopping when decided (--until-decided, rounds: {min, max}) compares variants; the plan has %d", path, len(variants))
		}
		sp.Sequential = &store.SequentialRounds{Min: p.MinRounds, Max: p.Rounds}
		if p.MinRounds < stats.MinWarmupPairs {
			fmt.Fprintf(stderr, "iolab: %s: looks begin at round %d: no comparison is decided before %d rounds, as fewer cannot tell a variant still warming up from a difference\n",
				path, p.MinRounds, stats.MinWarmupPairs)
		}
	}
	for _, v := range variants {
		if v.Commit != "" {
			sp.Commits[v.Name] = v.Commit
		}
	}
	sp.Setups = variantSetups(p.Variants)
	sp.Precondition = p.Precondition
	if o.step != nil {
		sp.Bisect = &o.step.record
	}
	lp := lab.Plan{Name: p.Name, Command: command, Rounds: p.Rounds, MinRounds: p.MinRounds, Warmup: p.Warmup,
		VariantWarmup: p.WarmupPerVariant, Cooldown: p.Cooldown,
		Seed: seed, Order: p.Order, KeepGoing: o.KeepGoing, Settings: sp, Resume: resume,
		BeforeRound: roundHook(p, "before_round", p.Hooks.BeforeRound),
		AfterRound:  roundHook(p, "after_round", p.Hooks.AfterRound)}
	o.Output.segmentPlan(&lp)
	if !o.Output.Segment.Split() {
		lp.StartAt, lp.Every = o.Output.StartAt, o.Output.Every
	} else if p.Seed == 0 && resume == "" {
		// Every segment runs the cells in the same order.
		lp.Seed = groupSeed(lp.SegmentGroup)
		sp.Seed = lp.Seed
		lp.Settings = sp
	}
	// What is judged as the runs go is the whole load: a segment's
	// experiment merged with the others' (the lab meets them first).
	load := st.Load
	if lp.Segment.Split() {
		load = func(ctx context.Context, _ string) (*store.Data, error) {
			d, _, err := analysis.MergeGroup(ctx, st, lp.SegmentGroup, nil)
			return d, err
		}
	}
	if pc := p.Precondition; pc != nil {
		lp.Preconditioned = func(ctx context.Context, id string) (bool, error) {
			data, err := load(ctx, id)
			if err != nil {
				return false, err
			}
			return analysis.PreconditionOf(data, *pc).Steady, nil
		}
	}
	rounds := fmt.Sprint(p.Rounds)
	if sp.Sequential != nil {
		lp.Decided = decided(load, analysis.OptionsFor(sp))
		rounds = fmt.Sprintf("%d to %d rounds, until decided", p.MinRounds, p.Rounds)
	}
	if o.step != nil {
		lp.Decided = func(ctx context.Context, id string) (bool, error) {
			data, err := load(ctx, id)
			if err != nil {
				return false, err
			}
			return o.step.decide(data), nil
		}
	}
	warm := fmt.Sprint(p.Warmup)
	if p.Precondition != nil {
		warm = fmt.Sprintf("up to %d, until steady,", p.Warmup)
	}
	fmt.Fprintf(stderr, "iolab: %s: %d variants x %d cells x (%s warm-up + %s), %s order\n",
		p.Name, len(variants), len(cells)/max(len(variants), 1), warm, rounds, p.Order)
	id, runErr := newRunner(st, o.Output.StoreGrace, stderr, progress).Run(ctx, lp, cells)
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

// checkPlanSegment resolves --segment for a plan and refuses a plan whose
// load does not split (Plan.SplitError), and calibration, which is of one
// host.
func checkPlanSegment(p *plan.Plan, o *ExperimentOptions) error {
	if err := o.Output.validateSegment(); err != nil {
		return err
	}
	seg := o.Output.Segment
	if !seg.Split() {
		return nil
	}
	if why := p.SplitError(); why != "" {
		return usage("--segment %s: %s", seg, why)
	}
	if o.Calibrate {
		return usage("--segment %s: --calibrate measures one host's noise; run it without --segment", seg)
	}
	return nil
}

// untilDecided applies --until-decided and --max-rounds to the plan.
func untilDecided(p *plan.Plan, o ExperimentOptions) error {
	if !o.UntilDecided {
		if o.MaxRounds > 0 {
			return usage("--max-rounds bounds --until-decided; give both (or the plan's rounds: {min, max})")
		}
		return nil
	}
	if p.MinRounds == 0 { // the plan's rounds are the fewest
		p.MinRounds = max(p.Rounds, plan.MinSequentialRounds)
		p.Rounds = max(60, 10*p.MinRounds)
	}
	if o.MaxRounds > 0 {
		p.Rounds = o.MaxRounds
	}
	if p.Rounds < p.MinRounds {
		return usage("--max-rounds %d is below the %d rounds the plan runs first", p.Rounds, p.MinRounds)
	}
	return nil
}

// decided says whether every primary comparison of an experiment that
// stops when decided is decided, judging the stored runs as its report
// will.
func decided(load func(context.Context, string) (*store.Data, error), opts analysis.Options) func(context.Context, string) (bool, error) {
	return func(ctx context.Context, id string) (bool, error) {
		data, err := load(ctx, id)
		if err != nil {
			return false, err
		}
		rep := analysis.Build(data, opts)
		n := 0
		for _, c := range rep.Comparisons {
			if !c.Primary {
				continue
			}
			if n++; c.Verdict == stats.Inconclusive {
				return false, nil
			}
		}
		return n > 0, nil
	}
}

// errInterruptedPhase is a phase outside the runs (a build, a later
// verify) cut by Ctrl-C or SIGTERM: an interruption (lab.ErrInterrupted,
// exit 130 or 143), which says only that — lab's own message speaks of
// finished runs, and such a phase has none.
var errInterruptedPhase error = interruptedPhase{}

type interruptedPhase struct{}

func (interruptedPhase) Error() string { return "interrupted" }
func (interruptedPhase) Unwrap() error { return lab.ErrInterrupted }

// prepareVariants builds every variant; with keepGoing a variant that does
// not build is left out (and named) instead of stopping the experiment.
// The progress line says which it builds, and the build's last line.
func prepareVariants(ctx context.Context, p *plan.Plan, builds *variant.Builds, runDir string, keepGoing bool, stderr io.Writer, progress *lab.Progress) ([]*variant.Variant, []string, error) {
	var out []*variant.Variant
	var skipped []string
	stderr = progress.Above(stderr)
	for i, spec := range p.Variants {
		progress.Phase(fmt.Sprintf("building variant %d/%d %s", i+1, len(p.Variants), spec.Name))
		v, err := variant.PrepareFrom(ctx, builds, spec, p.Dir, runDir, p.Ports, progress.Detail)
		if err != nil && ctx.Err() != nil {
			// Ctrl-C while it built: an interruption (exit 130), not a
			// build that failed; nothing ran, so nothing was stored.
			return out, nil, fmt.Errorf("variant %s: build %w before any run (nothing stored; run the plan again, or --resume an experiment it began earlier)",
				spec.Name, errInterruptedPhase)
		}
		if err != nil {
			if !keepGoing || spec.Name == p.Baseline {
				return out, nil, err
			}
			fmt.Fprintf(stderr, "iolab: %v; left out (--keep-going)\n", err)
			skipped = append(skipped, spec.Name)
			continue
		}
		out = append(out, v)
	}
	return out, skipped, nil
}

// roundHook runs a plan's round hook in the plan's directory.
func roundHook(p *plan.Plan, name, script string) func(context.Context) error {
	if script == "" {
		return nil
	}
	v := &variant.Variant{Workdir: p.Dir}
	return func(ctx context.Context) error { return v.Hook(ctx, name, script, nil) }
}

// findResumable finds the newest unfinished experiment of the plan and
// refuses if the plan changed since; text is the plan as stored
// (redactPlan).
func findResumable(ctx context.Context, st *store.Store, p *plan.Plan, text string, seg segment.Segment) (string, store.PlanRecord, error) {
	exps, err := st.ListExperiments(ctx)
	if err != nil {
		return "", store.PlanRecord{}, err
	}
	mine := ""
	if seg.Split() {
		mine = seg.String()
	}
	for _, e := range exps {
		if e.Name != p.Name || e.Status == "done" || e.Segment != mine { // a segment resumes its own
			continue
		}
		sp, ok := e.PlanRecord()
		if !ok || sp.Text == "" {
			continue
		}
		if sp.Text != text || sp.Order != p.Order {
			return "", sp, usage("--resume: the plan changed since experiment %s ran (%s); resume with the plan it started with, or start a new experiment",
				e.ID, lineDiff(sp.Text+"order: "+sp.Order, text+"order: "+p.Order))
		}
		return e.ID, sp, nil
	}
	return "", store.PlanRecord{}, usage("--resume: no unfinished experiment of plan %q in %s", p.Name, st.Path())
}

// variantSetups are, by variant, what the plan says makes it what it is
// beside its commit — env, limits, build and start commands, as written,
// the values of secret names masked and registered secrets scrubbed.
// maskedPairs writes NAME=value pairs in name order, a secret's value (by
// its name, or a URL's password) masked.
func maskedPairs(m map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		val := maskURL(m[k])
		if redact.IsSecretName(k) {
			val = redact.Mask
		}
		out = append(out, k+"="+val)
	}
	return strings.Join(out, " ")
}

func variantSetups(vs []plan.Variant) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, v := range vs {
		f := map[string]string{}
		if env := maskedPairs(v.Env); env != "" {
			f["env"] = env
		}
		if vars := maskedPairs(v.Vars); vars != "" {
			f["vars"] = vars
		}
		if l := v.Limits; l != nil {
			var parts []string
			if l.Memory.Text != "" {
				parts = append(parts, "memory="+l.Memory.Text)
			}
			if l.CPUs.Text != "" {
				parts = append(parts, "cpus="+l.CPUs.Text)
			}
			f["limits"] = strings.Join(parts, " ")
		}
		if v.Build != "" {
			f["build"] = v.Build
		}
		if v.Start != "" {
			f["start"] = v.Start
		}
		for k, val := range f {
			words := strings.Fields(redact.String(val))
			for i := range words {
				words[i] = maskURL(words[i])
			}
			f[k] = strings.Join(words, " ")
		}
		if len(f) > 0 {
			out[v.Name] = f
		}
	}
	return out
}

// maskURL masks a URL's secrets (redact.URL) where the URL starts after
// a flag's or variable's "=" (--url=http://u:pw@host).
func maskURL(word string) string {
	at := strings.Index(word, "://")
	if at < 0 {
		return word
	}
	start := strings.LastIndexByte(word[:at], '=') + 1
	return word[:start] + redact.URL(word[start:])
}
