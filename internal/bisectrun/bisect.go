// Package bisectrun runs `iolab bisect`: a plan's git variant searched
// over a range of commits, step by step, each step an experiment whose
// rounds stop once the statistics (package bisect) place its commit.
package bisectrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/iolab/iolab/internal/analysis"
	"github.com/iolab/iolab/internal/badinput"
	"github.com/iolab/iolab/internal/bisect"
	"github.com/iolab/iolab/internal/experiment"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/plan"
	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/scratch"
	"github.com/iolab/iolab/internal/stats"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/variant"
)

// Options are what a bisect is asked: the range (Good..Bad, first parents
// only with FirstParent), the variant and metric (default: the plan's
// only git variant, its workload's primary metric), the threshold within
// which the ends are the same, each step's rounds, and whether to resume
// the newest bisect of the same plan, range and metric. DB names the
// store in messages.
type Options struct {
	DB, Good, Bad, Variant, Metric string
	Threshold                      float64
	FirstParent, Resume            bool
	MinRounds, MaxRounds           int
	// Cache, if set, keeps the commits' builds across bisects.
	Cache *variant.Cache
}

// RunStep runs a step's plan text as an experiment — a stored step's
// continued when resume — and returns its ID ("" when nothing was stored).
type RunStep func(ctx context.Context, text []byte, resume bool, step *experiment.Step) (id string, err error)

// New reads the plan (one cell, a git variant) and the range of commits
// to bisect.
func New(ctx context.Context, path string, text []byte, o Options, runStep RunStep, stderr io.Writer) (*Bisect, error) {
	b := &Bisect{o: o, path: path, stderr: stderr, runStep: runStep, stored: map[int]store.Experiment{}}
	repo, err := b.readPlan(path, text)
	if err != nil {
		return nil, err
	}
	if b.commits, err = gitRange(ctx, repo, o.Good, o.Bad, o.FirstParent); err != nil {
		return nil, err
	}
	return b, nil
}

// Run searches the range, each step stored in st as it ends, and returns
// the answer (nil when there is none to show) and what stopped it; the
// answer so far is kept by the bisect's ID after every step.
func (b *Bisect) Run(ctx context.Context, st *store.Store) (*analysis.BisectView, error) {
	b.st = st
	if err := b.findSteps(ctx); err != nil {
		return nil, err
	}
	// What a killed bisect left (its builds, its worktrees) goes first.
	scratch.RemoveStale("", "bisect")
	scratch.RemoveStale("", "bisect-build")
	dir, err := scratch.Dir("", "bisect")
	if err != nil {
		return nil, err
	}
	b.builds = variant.NewBuilds(dir, b.o.Cache)
	defer b.builds.Close()
	view, err := b.run(ctx)
	if view == nil {
		return nil, err
	}
	if err != nil && view.Verdict == "" {
		view.Verdict = "stopped before an answer"
	}
	if view.ID != "" {
		err = errors.Join(err, b.save(ctx, view))
	}
	return view, err
}

// Ran is how many steps this process ran (not read back from the store).
func (b *Bisect) Ran() int { return b.ran }

// Bisect is a bisect of a plan's git variant over a range of commits,
// run step by step, each step an experiment.
type Bisect struct {
	o       Options
	path    string
	dir     string     // the plan's
	doc     *yaml.Node // the plan's
	spec    *yaml.Node // the bisected variant's node
	name    string     // the plan's
	variant string
	metric  string
	th      float64
	commits []bisect.Commit
	builds  *variant.Builds
	st      *store.Store
	id      string
	stored  map[int]store.Experiment // this bisect's steps, by step
	stderr  io.Writer
	runStep RunStep
	ran     int // steps this process ran (not read back)
}

// readPlan checks the plan can be bisected — one cell, a git variant —
// and keeps what the steps' plans are made from; it returns the
// variant's repository.
func (b *Bisect) readPlan(path string, text []byte) (string, error) {
	p, err := plan.Parse(path, text)
	if err != nil {
		return "", &badinput.Error{Err: err}
	}
	var git []plan.Variant
	for _, v := range p.Variants {
		if v.Git != nil && (b.o.Variant == "" || v.Name == b.o.Variant) {
			git = append(git, v)
		}
	}
	switch {
	case len(git) == 0 && b.o.Variant != "":
		return "", badinput.Errorf("--variant %q: the plan has no git variant of that name", b.o.Variant)
	case len(git) == 0:
		return "", badinput.Errorf("%s: no variant with git: {repo, ref}; bisect builds the commits of a git variant", path)
	case len(git) > 1:
		return "", badinput.Errorf("%s: %d git variants; name the one to bisect with --variant", path, len(git))
	}
	if n := p.Cells() / max(len(p.Variants), 1); n != 1 || len(p.Workloads) != 1 {
		return "", badinput.Errorf("%s: bisect judges one cell, and the plan has %d a variant; keep one workload, without a matrix", path, n)
	}
	w := p.Workloads[0]
	b.name, b.variant, b.metric, b.dir = p.Name, git[0].Name, b.o.Metric, p.Dir
	if b.metric == "" {
		b.metric = analysis.PrimaryMetric(w.Kind)
	}
	def, known := metrics.Describe(b.metric)
	known = known && def.Judged()
	if known && def.Zeroable {
		return "", badinput.Errorf("--metric %s: a metric that can be zero has no ratio to bisect on; give one such as %s", b.metric, analysis.PrimaryMetric(w.Kind))
	}
	for _, m := range w.Metrics {
		known = known || m.Name == b.metric
	}
	if !known {
		return "", badinput.Errorf("--metric %q: not a metric this plan's %s workload measures with a direction; give one such as %s", b.metric, w.Kind, analysis.PrimaryMetric(w.Kind))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil || len(doc.Content) != 1 {
		return "", badinput.Errorf("%s: %v", path, err)
	}
	b.doc = doc.Content[0]
	for _, v := range mapValue(b.doc, "variants").Content {
		if n := mapValue(v, "name"); n != nil && n.Value == b.variant {
			b.spec = v
		}
	}
	if b.spec == nil {
		return "", badinput.Errorf("%s: variant %q not found in the plan's text", path, b.variant)
	}
	repo := git[0].Git.Repo
	if !filepath.IsAbs(repo) {
		repo = filepath.Join(p.Dir, repo)
	}
	return repo, nil
}

// gitRange lists the commits from good to bad, good first: good, then
// each descendant of good that is an ancestor of bad, oldest first.
func gitRange(ctx context.Context, repo, good, bad string, firstParent bool) ([]bisect.Commit, error) {
	git := func(args ...string) (string, error) { return variant.Git(ctx, repo, args...) }
	resolve := func(flag, ref string) (bisect.Commit, error) {
		out, err := git("log", "-1", "--format=%H%x1f%s%x1f%cI", "--end-of-options", ref+"^{commit}")
		if err != nil {
			return bisect.Commit{}, badinput.Errorf("--%s %q: not a commit of %s: %v", flag, ref, repo, err)
		}
		f := strings.Split(strings.TrimSpace(out), "\x1f")
		return bisect.Commit{Hash: f[0], Subject: f[1], Date: f[2]}, nil
	}
	g, err := resolve("good", good)
	if err != nil {
		return nil, err
	}
	if _, err := resolve("bad", bad); err != nil {
		return nil, err
	}
	if _, err := git("merge-base", "--is-ancestor", good, bad); err != nil {
		return nil, badinput.Errorf("--good %s is not an ancestor of --bad %s: bisect searches the commits from one to the other", good, bad)
	}
	if !firstParent {
		// Merged branches make the range a graph, not a line: a commit of
		// a branch lacks the commits of the other, and no order of them
		// is a history to halve.
		merges, err := git("rev-list", "--merges", "--ancestry-path", g.Hash+".."+bad)
		if err != nil {
			return nil, err
		}
		if n := len(strings.Fields(merges)); n > 0 {
			return nil, badinput.Errorf("--good %s..--bad %s holds %d merge(s), so its commits are no single line to halve; give --first-parent (a merge then stands for its branch's commits)", good, bad, n)
		}
	}
	args := []string{"log", "--reverse", "--ancestry-path", "--format=%H%x1f%s%x1f%cI"}
	if firstParent {
		args = append(args, "--first-parent")
	}
	out, err := git(append(args, g.Hash+".."+bad)...)
	if err != nil {
		return nil, err
	}
	commits := []bisect.Commit{g}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Split(line, "\x1f"); len(f) == 3 {
			commits = append(commits, bisect.Commit{Hash: f[0], Subject: f[1], Date: f[2]})
		}
	}
	if len(commits) < 2 {
		return nil, badinput.Errorf("--good %s and --bad %s are the same commit: nothing to bisect", good, bad)
	}
	return commits, nil
}

// findSteps names the bisect: a new one, or with --resume the newest one
// of the same plan, variant, range and metric, whose stored steps it
// keeps.
func (b *Bisect) findSteps(ctx context.Context) error {
	b.id = fmt.Sprintf("%s-%04x", time.Now().UTC().Format("20060102-150405"), rand.N(1<<16))
	if !b.o.Resume {
		return nil
	}
	exps, err := b.st.ListExperiments(ctx) // newest first
	if err != nil {
		return err
	}
	b.id = ""
	for _, e := range exps {
		var rec store.PlanRecord
		if json.Unmarshal(e.Plan, &rec) != nil || rec.Bisect == nil {
			continue
		}
		r := rec.Bisect
		if r.Good != b.commits[0].Hash || r.Bad != b.commits[len(b.commits)-1].Hash || r.Variant != b.variant || r.Metric != b.metric {
			continue
		}
		if b.id == "" {
			b.id = r.ID
			if r.MinRounds != b.o.MinRounds || r.MaxRounds != b.o.MaxRounds || r.Threshold != b.o.Threshold {
				return badinput.Errorf("--resume: bisect %s ran with --min-rounds %d --max-rounds %d --threshold %g%%; give the same, as its steps were judged by them",
					r.ID, r.MinRounds, r.MaxRounds, 100*r.Threshold)
			}
		}
		if r.ID == b.id {
			if prev, ok := b.stored[r.Step]; !ok || e.CreatedAt.After(prev.CreatedAt) {
				b.stored[r.Step] = e
			}
		}
	}
	if b.id == "" {
		return badinput.Errorf("--resume: no bisect of variant %s from %.10s to %.10s on %s is stored in %s", b.variant, b.commits[0].Hash, b.commits[len(b.commits)-1].Hash, b.metric, b.o.DB)
	}
	return nil
}

// run confirms the ends differ, then bisects; what it found so far is
// returned with the error that stopped it.
func (b *Bisect) run(ctx context.Context) (*analysis.BisectView, error) {
	good, bad := b.commits[0], b.commits[len(b.commits)-1]
	view := &analysis.BisectView{ID: b.id, Plan: b.name, Variant: b.variant, Metric: b.metric, Good: good, Bad: bad, Commits: len(b.commits), Culprits: []analysis.BisectCulprit{}}
	last := len(b.commits) - 1
	ends, err := b.step(ctx, 0, 0, -1, last)
	if ends != nil {
		view.Steps = append(view.Steps, *ends)
		err = errors.Join(err, b.keep(ctx, view, nil))
	}
	if err != nil {
		return b.finish(view, nil), err
	}
	if ends.Whole == nil {
		return b.finish(view, nil), fmt.Errorf("--metric %s: the runs of the ends measured no such figure (experiment %s: iolab show %s lists what they did)", b.metric, ends.Experiment, ends.Experiment)
	}
	view.Change = *ends.Whole
	switch ends.Verdict {
	case bisect.LikeLow:
		view.Verdict = fmt.Sprintf("the ends do not differ on %s: their difference lies within ±%g%%; nothing to bisect", b.metric, 100*b.o.Threshold)
		return b.finish(view, nil), nil
	case bisect.Undecided:
		view.Verdict = fmt.Sprintf("the ends were not shown to differ on %s in %d rounds; nothing to bisect (more --max-rounds may show it)", b.metric, ends.Rounds)
		return b.finish(view, nil), nil
	}
	view.Differ = true
	s, err := bisect.New(b.commits)
	if err != nil {
		return b.finish(view, nil), err
	}
	for n := 1; !s.Done(); n++ {
		lo, mid, hi, _ := s.Next()
		st, err := b.step(ctx, n, lo, mid, hi)
		if err != nil {
			return b.finish(view, s), err
		}
		view.Steps = append(view.Steps, *st)
		if err := s.Record(bisect.Step{Low: lo, Mid: mid, High: hi, Verdict: st.Verdict, Position: st.Position, Runs: st.Rounds}); err != nil {
			return b.finish(view, s), err
		}
		if err := b.keep(ctx, view, s); err != nil {
			return b.finish(view, s), err
		}
	}
	// A culprit is named by the steps around it, each judged on where
	// the commit lies between its ends; its own step against its parent
	// may not be shown by them. Such a culprit is measured against its
	// parent alone until that is decided, as the ends were.
	n := len(view.Steps)
	for _, c := range s.Culprits() {
		if analysis.Shown(b.culpritStep(view.Steps, c.Index), view.Change) {
			continue
		}
		st, err := b.step(ctx, n, c.Index-1, -1, c.Index)
		if err != nil {
			return b.finish(view, s), err
		}
		view.Steps = append(view.Steps, *st)
		n++
		if err := b.keep(ctx, view, s); err != nil {
			return b.finish(view, s), err
		}
	}
	return b.finish(view, s), nil
}

// keep stores the answer so far (finished from a copy of view), where
// show and report read it back: a bisect cut by kill -9 leaves the one
// after its last step.
func (b *Bisect) keep(ctx context.Context, view *analysis.BisectView, s *bisect.Search) error {
	sofar := *view
	sofar.Steps, sofar.Culprits, sofar.Experiments, sofar.Rounds = slices.Clone(view.Steps), []analysis.BisectCulprit{}, nil, 0
	b.finish(&sofar, s)
	if sofar.Verdict == "" {
		sofar.Verdict = "not finished"
	}
	return b.save(ctx, &sofar)
}

// save stores a bisect's answer.
func (b *Bisect) save(ctx context.Context, view *analysis.BisectView) error {
	answer, err := json.Marshal(view)
	if err != nil {
		return err
	}
	return b.st.SaveBisect(context.WithoutCancel(ctx), b.id, answer)
}

// finish fills the answer from the search s (nil before it began).
func (b *Bisect) finish(view *analysis.BisectView, s *bisect.Search) *analysis.BisectView {
	for _, st := range view.Steps {
		view.Rounds += st.Rounds
		if st.Experiment != "" {
			view.Experiments = append(view.Experiments, st.Experiment)
		}
	}
	if s == nil {
		return view
	}
	for i := range view.Steps {
		if st := &view.Steps[i]; st.Mid != "" {
			if p, ok := s.Place(st.MidIndex); ok {
				st.Place = &p
			}
		}
	}
	confirmed := true
	for _, c := range s.Culprits() {
		cv := analysis.BisectCulprit{Culprit: c, Step: b.culpritStep(view.Steps, c.Index)}
		cv.Confirmed = analysis.Shown(cv.Step, view.Change)
		confirmed = confirmed && cv.Confirmed
		view.Culprits = append(view.Culprits, cv)
	}
	view.Ambiguous, view.Skipped = s.Ambiguities(), s.Skipped()
	switch {
	case !s.Done():
		view.Verdict = "not finished"
	case len(view.Culprits) == 1 && len(view.Ambiguous) == 0:
		view.Verdict = "found"
	case len(view.Culprits) > 1 && len(view.Ambiguous) == 0:
		view.Verdict = "spread over several commits"
	case len(view.Culprits) == 0:
		view.Verdict = "ambiguous"
	default:
		view.Verdict = "found in part; the rest ambiguous"
	}
	if !confirmed {
		view.Verdict += ", not confirmed: a culprit against its parent is not shown to change the way the ends do (a step before may have gone the wrong way; bisect again with more --max-rounds)"
	}
	return view
}

// culpritStep is the culprit against the commit before it, from the
// latest step that measured both.
func (b *Bisect) culpritStep(steps []analysis.BisectStep, i int) *analysis.RatioEstimate {
	culprit, parent := b.commits[i].Hash, b.commits[i-1].Hash
	for k := len(steps) - 1; k >= 0; k-- {
		st := steps[k]
		switch {
		case st.Low == parent && st.Mid == culprit:
			return st.VsLow
		case st.Mid == parent && st.High == culprit:
			return st.ToHigh
		case st.Low == parent && st.High == culprit:
			return st.Whole
		}
	}
	return nil
}

// step measures commits lo, mid and hi (mid -1: the ends alone) in one
// experiment, or reads it stored, and judges it.
func (b *Bisect) step(ctx context.Context, n, lo, mid, hi int) (*analysis.BisectStep, error) {
	view := &analysis.BisectStep{Step: n, Low: b.commits[lo].Hash, High: b.commits[hi].Hash, MidIndex: mid, Confirms: mid < 0 && n > 0}
	names := []string{b.label(lo)}
	if mid >= 0 {
		view.Mid = b.commits[mid].Hash
		names = append(names, b.label(mid))
	}
	names = append(names, b.label(hi))
	rec := store.BisectRecord{ID: b.id, Step: n, Variant: b.variant, Metric: b.metric, Good: b.commits[0].Hash, Bad: b.commits[len(b.commits)-1].Hash,
		Low: view.Low, Mid: view.Mid, High: view.High, MinRounds: b.o.MinRounds, MaxRounds: b.o.MaxRounds, Threshold: b.o.Threshold}
	prev, stored := b.stored[n]
	if stored {
		var pr store.PlanRecord
		_ = json.Unmarshal(prev.Plan, &pr)
		if r := pr.Bisect; r == nil || r.Low != rec.Low || r.Mid != rec.Mid || r.High != rec.High {
			return nil, fmt.Errorf("bisect %s: its stored step %d (experiment %s) measured other commits than the search asks now; start the bisect again without --resume", b.id, n, prev.ID)
		}
	}
	if stored && (prev.Status == "done" || prev.Status == store.StatusFailed) {
		data, err := b.st.Load(ctx, prev.ID)
		if err != nil {
			return nil, err
		}
		view.Experiment = prev.ID
		b.judge(data, names, view)
		fmt.Fprintf(b.stderr, "iolab: bisect step %d (stored): %s\n", n, b.said(view))
		return view, nil
	}
	if mid >= 0 {
		// A commit that does not build is skipped before any run.
		if unbuildable, err := b.build(ctx, mid); err != nil || unbuildable != nil {
			if unbuildable != nil {
				view.Verdict = bisect.Unbuildable
				fmt.Fprintf(b.stderr, "iolab: bisect step %d: %.10s does not build, skipped: %v\n", n, view.Mid, unbuildable)
				return view, nil
			}
			return nil, err
		}
	}
	text, err := b.stepPlan(n, lo, mid, hi)
	if err != nil {
		return nil, err
	}
	step := &experiment.Step{Builds: b.builds, Record: rec, Decide: func(d *store.Data) bool {
		v := &analysis.BisectStep{}
		b.judge(d, names, v)
		// Rounds without the metric in every commit's run decide nothing
		// however many follow: stop, and say so. Rounds the client spoiled
		// are run again.
		return v.Verdict != bisect.Undecided || (v.Rounds == 0 && v.ClientDelayed == 0)
	}}
	fmt.Fprintf(b.stderr, "iolab: bisect step %d: %s\n", n, b.between(lo, mid, hi))
	id, runErr := b.runStep(ctx, text, stored, step)
	b.ran++
	if id == "" {
		return nil, runErr
	}
	view.Experiment = id
	data, err := b.st.Load(context.WithoutCancel(ctx), id)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	b.judge(data, names, view)
	if runErr != nil {
		return view, runErr
	}
	fmt.Fprintf(b.stderr, "iolab: bisect step %d: %s\n", n, b.said(view))
	return view, nil
}

// build builds commit i into the builds (the step's experiment finds it
// there): its build's error if it does not build, else err if it could
// not be tried.
func (b *Bisect) build(ctx context.Context, i int) (unbuildable, err error) {
	spec, err := b.specOf(i)
	if err != nil {
		return nil, err
	}
	tmp, err := scratch.Dir("", "bisect-build")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	v, err := variant.PrepareFrom(ctx, b.builds, nil, spec, b.dir, tmp, plan.PortRange{}, nil)
	if err != nil && ctx.Err() != nil {
		// Ctrl-C while it built: an interruption (the bisect resumes at
		// this step), never a commit that does not build.
		return nil, fmt.Errorf("bisect: build of %.10s %w (--resume builds it again)", b.commits[i].Hash, lab.ErrInterruptedPhase)
	}
	var be *variant.BuildError
	if errors.As(err, &be) {
		return err, nil
	}
	if err != nil {
		return nil, err
	}
	return nil, v.Close()
}

// bisectNote is the answer in a line, for the last step's notes.

// label is a commit's variant name in a step: its short hash.
func (b *Bisect) label(i int) string { return b.commits[i].Hash[:12] }

// between names a step's commits as the log does.
func (b *Bisect) between(lo, mid, hi int) string {
	switch {
	case mid < 0 && lo == 0 && hi == len(b.commits)-1:
		return fmt.Sprintf("the ends, %.10s (good) and %.10s (bad)", b.commits[lo].Hash, b.commits[hi].Hash)
	case mid < 0:
		return fmt.Sprintf("culprit %.10s %q (commit %d of %d) against its parent %.10s", b.commits[hi].Hash, b.commits[hi].Subject, hi, len(b.commits)-1, b.commits[lo].Hash)
	}
	return fmt.Sprintf("%.10s %q (commit %d of %d), between %.10s and %.10s", b.commits[mid].Hash, b.commits[mid].Subject, mid, len(b.commits)-1, b.commits[lo].Hash, b.commits[hi].Hash)
}

// said is a step's outcome in a line.
func (b *Bisect) said(v *analysis.BisectStep) string {
	what := string(v.Verdict)
	ends := "the ends"
	if v.Confirms {
		ends = "the culprit and its parent"
	}
	if v.Mid == "" {
		switch v.Verdict {
		case bisect.Between:
			what = ends + " differ"
		case bisect.LikeLow:
			what = ends + " are the same"
		}
	}
	if e := v.Whole; e != nil {
		what += fmt.Sprintf("; high/low %s", report.ChangeText(*e))
	}
	if e := v.VsLow; e != nil {
		what += fmt.Sprintf("; commit/low %s", report.ChangeText(*e))
	}
	said := fmt.Sprintf("%s after %d rounds", what, v.Rounds)
	if v.ClientDelayed > 0 {
		said += fmt.Sprintf(" (and %d not counted: in a commit's run there iolab's own delay was over %.0f%% of what it measured — the client, not the commits, differed)", v.ClientDelayed, metrics.GenDelayShare)
	}
	return said
}

// specOf is the bisected variant at commit i, as a plan holds it.
func (b *Bisect) specOf(i int) (plan.Variant, error) {
	p, err := plan.Parse(b.path, b.planText([]*yaml.Node{b.variantNode(i)}, "", 0, 0))
	if err != nil {
		return plan.Variant{}, err
	}
	return p.Variants[0], nil
}

// variantNode is the bisected variant's node at commit i.
func (b *Bisect) variantNode(i int) *yaml.Node {
	v := cloneNode(b.spec)
	setValue(v, "name", scalar(b.label(i)))
	setValue(mapValue(v, "git"), "ref", scalar(b.commits[i].Hash))
	return v
}

// stepPlan is the plan of step n: the bisected variant at each commit,
// the low end the baseline, rounds until decided.
func (b *Bisect) stepPlan(n, lo, mid, hi int) ([]byte, error) {
	vs := []*yaml.Node{b.variantNode(lo)}
	if mid >= 0 {
		vs = append(vs, b.variantNode(mid))
	}
	vs = append(vs, b.variantNode(hi))
	return b.planText(vs, fmt.Sprintf("%s bisect %s step %d", b.name, b.id, n), b.o.MinRounds, b.o.MaxRounds), nil
}

// planText is the plan with variants vs (the first the baseline), and
// name and rounds when given.
func (b *Bisect) planText(vs []*yaml.Node, name string, minRounds, maxRounds int) []byte {
	doc := cloneNode(b.doc)
	setValue(doc, "variants", &yaml.Node{Kind: yaml.SequenceNode, Content: vs})
	setValue(doc, "baseline", scalar(mapValue(vs[0], "name").Value))
	if name != "" {
		setValue(doc, "name", scalar(name))
	}
	if maxRounds > 0 {
		r := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		r.Content = append(r.Content, scalar("min"), intScalar(minRounds), scalar("max"), intScalar(maxRounds))
		setValue(doc, "rounds", r)
	}
	text, _ := yaml.Marshal(doc)
	return text
}

// judge reads a step's experiment: the metric of its commits (names:
// low, [mid,] high) round by round, judged as the bisect judges, by
// intervals that hold at every look.
func (b *Bisect) judge(d *store.Data, names []string, v *analysis.BisectStep) {
	variantOf := map[int64]string{}
	for _, c := range d.Cells {
		variantOf[c.ID] = c.Variant
	}
	byRound := map[string]map[int]float64{}
	// A round in which a commit's run measured its client as much as its
	// target (metrics.ClientDelayed) decides nothing of the commits: it is
	// left out, and said.
	delayed := map[int]bool{}
	for _, r := range d.Runs {
		if r.Warmup || r.Status != store.StatusOK || r.Result == nil {
			continue
		}
		m := metrics.RunMetrics(r.Result)
		if metrics.ClientDelayed(m) {
			delayed[r.Round] = true
			continue
		}
		x, ok := m[b.metric]
		if !ok || !(x > 0) || math.IsInf(x, 0) {
			continue
		}
		if byRound[variantOf[r.CellID]] == nil {
			byRound[variantOf[r.CellID]] = map[int]float64{}
		}
		byRound[variantOf[r.CellID]][r.Round] = x
	}
	cols := make([][]float64, len(names))
	v.ClientDelayed = len(delayed)
	for _, round := range slices.Sorted(maps.Keys(byRound[names[0]])) {
		if delayed[round] {
			continue
		}
		row := make([]float64, len(names))
		whole := true
		for i, n := range names {
			x, ok := byRound[n][round]
			row[i], whole = x, whole && ok
		}
		if whole {
			for i := range names {
				cols[i] = append(cols[i], row[i])
			}
		}
	}
	// The bisect's error is every step's: a step's tests share the 5%
	// with the others the search may take (log2 of the commits). A step
	// makes two: the halfway test, and "in between", which needs both of
	// its intervals (the commit against each end) to exclude no change —
	// an intersection-union test, wrong only where one of them is, so
	// both take the share of one.
	var mid []float64
	family := 1
	if len(names) == 3 {
		mid, family = cols[1], 2*max(1, int(math.Ceil(math.Log2(float64(len(b.commits)-1)))))
	}
	m := bisect.Measured(cols[0], mid, cols[len(cols)-1], stats.NewSequential(b.o.Threshold, b.o.MinRounds, b.o.MaxRounds, family))
	v.Rounds, v.Whole = m.Rounds, estimateOf(m.Whole, m.Rounds)
	v.Verdict, v.Position = bisect.Undecided, 0
	if len(names) == 2 {
		differ, same := bisect.Ends(m.Whole, b.o.Threshold)
		switch {
		case differ:
			v.Verdict, v.Position = bisect.Between, 1
		case same:
			v.Verdict, v.Position = bisect.LikeLow, 0
		}
		return
	}
	v.VsLow, v.ToHigh = estimateOf(m.VsLow, m.Rounds), estimateOf(m.ToHigh, m.Rounds)
	v.Verdict, v.Position = bisect.Judge(m)
	if math.IsNaN(v.Position) { // JSON has no NaN; an undecided step's place is its verdict's
		v.Position = 0
	}
}

// estimateOf is an estimate of a log ratio as a ratio; nil without one.
func estimateOf(e bisect.Estimate, rounds int) *analysis.RatioEstimate {
	if math.IsNaN(e.Log) {
		return nil
	}
	return &analysis.RatioEstimate{Ratio: math.Exp(e.Log), CI95: [2]float64{math.Exp(e.Lo), math.Exp(e.Hi)}, Rounds: rounds}
}

// mapValue is the value of key in a YAML mapping; nil if none.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setValue sets key of a YAML mapping to v, in place or added.
func setValue(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, scalar(key), v)
}

func intScalar(n int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(n)}
}

func cloneNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = nil
	for _, x := range n.Content {
		c.Content = append(c.Content, cloneNode(x))
	}
	return &c
}

// scalar is a YAML string node.
func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
