package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/redact"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/variant"
)

// Spec is a plan to run end to end, as a command asks for it.
type Spec struct {
	// Path is the plan's file (or the command that made the plan).
	Path string
	// Plan is the plan parsed, with the command line's order, ports and
	// rounds applied; Stored its text as stored (plan.Redact).
	Plan   *plan.Plan
	Stored string
	// Command is the command line, as the experiment records it.
	Command string
	// Seed is the schedule's (the plan's, the clock's, or the resumed
	// experiment's); Resume the experiment to continue ("": a new one).
	Seed   uint64
	Resume string
	// KeepGoing records failed runs and leaves out variants that do not
	// build (--keep-going).
	KeepGoing bool
	// Segment holds the share of a load run in several processes
	// (lab.Plan's Segment, SegmentGroup, StartAt, Every, BarrierTimeout
	// and RejoinTimeout), or, unsplit, its start time and pace.
	Segment lab.Plan
	// Step, when set, runs the plan as a step of a bisect.
	Step *Step
	// RunDir is where variants are built (a scratch directory).
	RunDir string
	// ShowOutput, if set, gets what each measured run prints
	// (--show-output); safe for concurrent use.
	ShowOutput io.Writer
	// Cache, if set, keeps git variants' builds across experiments.
	Cache *variant.Cache
}

// Step is what a bisect asks of one step's experiment: its variants'
// builds from Builds, its record marked, its rounds stopped as soon as
// Decide says.
type Step struct {
	Builds *variant.Builds
	Record store.BisectRecord
	Decide func(*store.Data) bool
}

// Run prepares the plan's variants, compiles its cells and runs them in
// rounds with runner, each run stored the moment it ends; what a user
// should know goes to runner.Notices (above the live line). It returns
// the experiment's ID ("" when nothing was stored), the variants left out
// (KeepGoing), and what stopped it.
func Run(ctx context.Context, st *store.Store, runner *lab.Runner, s Spec) (id string, skipped []string, err error) {
	p := s.Plan
	notices := runner.Notices
	var builds *variant.Builds
	if s.Step != nil {
		builds = s.Step.Builds
	}
	variants, skipped, err := PrepareVariants(ctx, p, builds, s.Cache, s.RunDir, s.KeepGoing, notices, runner.Progress)
	defer func() {
		for _, v := range variants {
			_ = v.Close()
		}
	}()
	if err != nil {
		return "", nil, err
	}
	cells, err := Cells(p, variants, s.Segment.Segment, s.ShowOutput)
	if err != nil {
		return "", nil, &badinput.Error{Err: err}
	}
	for _, w := range p.Workloads {
		if advice := w.ScaleAdvice(); advice != "" {
			fmt.Fprintf(notices, "iolab: %s\n", advice)
		}
	}
	sp, err := record(s, variants, notices)
	if err != nil {
		return "", nil, err
	}
	seg := s.Segment
	lp := lab.Plan{Name: p.Name, Command: s.Command, Rounds: p.Rounds, MinRounds: p.MinRounds, Warmup: p.Warmup,
		VariantWarmup: p.WarmupPerVariant, Cooldown: p.Cooldown,
		Seed: s.Seed, Order: p.Order, KeepGoing: s.KeepGoing, Settings: sp, Resume: s.Resume,
		BeforeRound: RoundHook(p, "before_round", p.Hooks.BeforeRound),
		AfterRound:  RoundHook(p, "after_round", p.Hooks.AfterRound),
		Segment:     seg.Segment, SegmentGroup: seg.SegmentGroup, StartAt: seg.StartAt, Every: seg.Every,
		BarrierTimeout: seg.BarrierTimeout, RejoinTimeout: seg.RejoinTimeout}
	if lp.Segment.Split() && p.Seed == 0 && s.Resume == "" {
		// Every segment runs the cells in the same order.
		lp.Seed = segment.GroupSeed(lp.SegmentGroup)
		sp.Seed = lp.Seed
		lp.Settings = sp
	}
	rounds := judgeAsTheyGo(st, &lp, s, sp)
	warm := fmt.Sprint(p.Warmup)
	if p.Precondition != nil {
		warm = fmt.Sprintf("up to %d, until steady,", p.Warmup)
	}
	fmt.Fprintf(notices, "iolab: %s: %d variants x %d cells x (%s warm-up + %s), %s order\n",
		p.Name, len(variants), len(cells)/max(len(variants), 1), warm, rounds, p.Order)
	id, err = runner.Run(ctx, lp, cells)
	if cerr := cleanup(ctx, p, variants, err); cerr != nil && err == nil {
		err = cerr
	}
	return id, skipped, err
}

// cleanup runs the plan's cleanup hook once per variant, after its last
// run (hyperfine's --cleanup), when the runs ended — done, or stopped by
// a failure — but not when they were interrupted: a resume goes on with
// what they left.
func cleanup(ctx context.Context, p *plan.Plan, variants []*variant.Variant, runErr error) error {
	if p.Hooks.Cleanup == "" || ctx.Err() != nil || errors.Is(runErr, context.Canceled) {
		return nil
	}
	for _, v := range variants {
		if err := v.Hook(ctx, "cleanup", p.Hooks.Cleanup, v.Spec().Vars); err != nil {
			return fmt.Errorf("variant %s: %w", v.Name, err)
		}
	}
	return nil
}

// judgeAsTheyGo sets what the lab asks between rounds — whether the
// precondition is met, whether the comparisons (or a bisect's step) are
// decided — judged on the whole load: a segment's experiment merged with
// the others' (the lab meets them first). It returns the rounds as the
// banner says them.
func judgeAsTheyGo(st *store.Store, lp *lab.Plan, s Spec, sp store.PlanRecord) string {
	p := s.Plan
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
	if s.Step != nil {
		lp.Decided = func(ctx context.Context, id string) (bool, error) {
			data, err := load(ctx, id)
			if err != nil {
				return false, err
			}
			return s.Step.Decide(data), nil
		}
	}
	return rounds
}

// record is what the experiment stores of its plan: its text, baseline,
// threshold, order and seed, the commits and set-ups of its variants,
// its custom metrics, its stopping rule and precondition, its bisect.
func record(s Spec, variants []*variant.Variant, notices io.Writer) (store.PlanRecord, error) {
	p := s.Plan
	sp := store.PlanRecord{Path: s.Path, Text: s.Stored, Baseline: p.Baseline, Along: p.Along, Threshold: p.Threshold, Order: p.Order,
		Seed: s.Seed, Commits: map[string]string{}, AutoWarmup: p.AutoWarmup, Extrapolate: store.Extrapolate(p.Extrapolate), Custom: map[string]bool{},
		CustomUnits: map[string]string{}}
	for _, w := range p.Workloads {
		for _, m := range w.Metrics {
			sp.Custom[m.Name] = m.LowerIsBetter
			if m.Unit != "" {
				sp.CustomUnits[m.Name] = m.Unit
			}
		}
	}
	if p.MinRounds > 0 {
		if len(variants) < 2 {
			return store.PlanRecord{}, badinput.Errorf("%s: stopping when decided (--until-decided, rounds: {min, max}) compares variants; the plan has %d", s.Path, len(variants))
		}
		sp.Sequential = &store.SequentialRounds{Min: p.MinRounds, Max: p.Rounds}
		if p.MinRounds < stats.MinWarmupPairs {
			fmt.Fprintf(notices, "iolab: %s: looks begin at round %d: no comparison is decided before %d rounds, as fewer cannot tell a variant still warming up from a difference\n",
				s.Path, p.MinRounds, stats.MinWarmupPairs)
		}
	}
	for _, v := range variants {
		if v.Commit != "" {
			sp.Commits[v.Name] = v.Commit
		}
	}
	sp.Setups = variantSetups(p.Variants)
	sp.Precondition = p.Precondition
	if s.Step != nil {
		sp.Bisect = &s.Step.Record
	}
	return sp, nil
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

// PrepareVariants builds every variant; with keepGoing a variant that does
// not build is left out (and named) instead of stopping the experiment.
// The progress line says which it builds, and the build's last line.
// Notices go to notices, which keeps them above the live line
// (Progress.Above).
func PrepareVariants(ctx context.Context, p *plan.Plan, builds *variant.Builds, cache *variant.Cache, runDir string, keepGoing bool, notices io.Writer, progress *lab.Progress) ([]*variant.Variant, []string, error) {
	var out []*variant.Variant
	var skipped []string
	for i, spec := range p.Variants {
		progress.Phase(fmt.Sprintf("building variant %d/%d %s", i+1, len(p.Variants), spec.Name))
		v, err := variant.PrepareFrom(ctx, builds, cache, spec, p.Dir, runDir, p.Ports, progress.Detail)
		if err != nil && ctx.Err() != nil {
			// Ctrl-C while it built: an interruption (exit 130), not a
			// build that failed; nothing ran, so nothing was stored.
			return out, nil, fmt.Errorf("variant %s: build %w before any run (nothing stored; run the plan again, or --resume an experiment it began earlier)",
				spec.Name, lab.ErrInterruptedPhase)
		}
		if err != nil {
			if !keepGoing || spec.Name == p.Baseline {
				return out, nil, err
			}
			fmt.Fprintf(notices, "iolab: %v; left out (--keep-going)\n", err)
			skipped = append(skipped, spec.Name)
			continue
		}
		if v.FromCache != "" {
			fmt.Fprintf(notices, "iolab: variant %s: its build of %.10s from the build cache (%s); %s=off builds it again\n", v.Name, v.Commit, v.FromCache, variant.CacheEnv)
		}
		out = append(out, v)
	}
	return out, skipped, nil
}

// RoundHook runs a plan's round hook in the plan's directory.
func RoundHook(p *plan.Plan, name, script string) func(context.Context) error {
	if script == "" {
		return nil
	}
	v := &variant.Variant{Workdir: p.Dir}
	return func(ctx context.Context) error { return v.Hook(ctx, name, script, nil) }
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
