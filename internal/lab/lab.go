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
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/iolab/iolab/internal/envinfo"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/observe"
	"github.com/iolab/iolab/internal/outpath"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/workload"
)

// Cell is one workload to repeat, for one variant.
type Cell struct {
	// Name is the workload and its parameters: the same for every variant,
	// so comparisons pair the cells of one name.
	Name     string
	Variant  string
	Workload workload.Workload
	// Target is the path under test, for environment snapshots.
	Target string
	// Around, if set, runs before and after every run of the cell (a
	// variant's server start and stop, the plan's run hooks).
	Around Around
	// Params are stored with the workload's own parameters (matrix fields
	// that are not workload keys, the variant's limits).
	Params map[string]string
	// PerStart says the workload depends on the server Around starts (it
	// logs in, creates its bucket, uploads what it reads): it is prepared
	// after every start and closed before every stop, instead of once.
	PerStart bool
	// Calibrate, if set, makes the cell's first runs, store.CalibrationRuns
	// of them, its calibration: they run after the variants' own warm-up
	// runs and before any other, are stored as warm-up runs of rounds from
	// store.CalibrationRound, and what each measured is handed to
	// Calibrate — the stored runs', on resume. An error fails the run.
	// (A curve's flat-out cell: its rate paces the curve's other cells.)
	Calibrate func(res *metrics.Result) error
	// Calibrated says the cell's workload is built from what a
	// calibration measured: it runs no variant warm-up run, and is
	// prepared before its own first run rather than with the others.
	Calibrated bool
	// Rounds, when set, is how many measured rounds the cell may run
	// instead of the plan's (a search's most runs); Done, when set, ends
	// them early: the cell's remaining runs are not run.
	Rounds int
	Done   func() bool
	// Ran, if set, is handed every measured run of the cell that ended,
	// in order, before it is stored — and on resume every one stored —
	// with whether it succeeded; an error fails the run (and a resume).
	Ran func(res *metrics.Result, ok bool) error
	// FailuresAreFindings says a failed run of the cell is what it
	// measured (a load the target could not serve, which Ran judges):
	// the experiment goes on.
	FailuresAreFindings bool
}

// Observer is an Around that watches what it started (a variant's server)
// while the workload runs: Observe starts watching, handing each second of
// the server to each as it ends, and the function it returns stops and
// says what it saw.
type Observer interface {
	Observe(each func(metrics.ServerSecond)) (stop func() observe.Observation)
}

// Around wraps each run of a cell. AfterRun is called whenever BeforeRun
// was, also when the run failed.
type Around interface {
	BeforeRun(ctx context.Context) error
	AfterRun(ctx context.Context) error
}

// Plan says how to repeat the cells.
type Plan struct {
	Name    string
	Command string // the command line, for the record
	Rounds  int
	// MinRounds, when set, lets the experiment stop after any measured
	// round from MinRounds on at which Decided says it is decided; Rounds
	// is then the most it runs. Random order only.
	MinRounds int
	Decided   func(ctx context.Context, expID string) (bool, error)
	Warmup    int
	// Preconditioned, if set, is asked after each warm-up round (and
	// when a resumed experiment starts) whether the warm-up is done: the
	// warm-up rounds left are then not run. Random order only.
	Preconditioned func(ctx context.Context, expID string) (bool, error)
	// VariantWarmup is how many unmeasured runs each variant makes, its
	// cells in turn, before the warm-up rounds.
	VariantWarmup int
	Cooldown      time.Duration
	Seed          uint64
	Order         string // OrderRandom (default) or OrderSequential
	// KeepGoing records a failed run and goes on instead of stopping.
	KeepGoing bool
	// BeforeRound and AfterRound, if set, run around each block of runs.
	BeforeRound, AfterRound func(ctx context.Context) error
	// Settings is stored as the experiment's plan, for show and resume.
	Settings any
	// Resume is the ID of a stored experiment to continue: runs it
	// finished are skipped, the rest run as first scheduled.
	Resume string
	// Segment is this process's share of a load N processes run together
	// (its workloads already hold their share); SegmentGroup names the
	// load, the same in every segment and unique to it.
	Segment      segment.Segment
	SegmentGroup string
	// StartAt, when set, is the agreed instant the first run starts.
	// Without it a split load's segments meet at a barrier in the store
	// and start together a second after the last arrived, or fail after
	// BarrierTimeout naming the ones that never came.
	StartAt        time.Time
	BarrierTimeout time.Duration
	// Every, with StartAt, starts schedule entry i at StartAt + i·Every
	// instead of at a barrier: segments that share no store keep in step
	// by the clock. A run that starts late is late (the merge says so).
	Every time.Duration
	// RejoinTimeout is how long the segments at a barrier wait for one
	// whose runner died (or was stopped) to be started again, before they
	// stop too; 0 stops them at once.
	RejoinTimeout time.Duration
	// LatencyLog, when set, is a file every measured operation is written
	// to (metrics.LatencyLog), as the run it belongs to; with
	// LatencyLogFio, the start of each run's file, in fio's format.
	LatencyLog    string
	LatencyLogFio bool
}

// ErrInterrupted is returned when the experiment was cancelled; what
// finished is stored.
var ErrInterrupted = errors.New("interrupted; finished runs are stored")

// ErrInterruptedPhase is a phase outside the runs (a build, a later
// verify) cut by Ctrl-C or SIGTERM: an interruption (ErrInterrupted,
// exit 130 or 143), which says only that — lab's own message speaks of
// finished runs, and such a phase has none.
var ErrInterruptedPhase error = interruptedPhase{}

type interruptedPhase struct{}

func (interruptedPhase) Error() string { return "interrupted" }
func (interruptedPhase) Unwrap() error { return ErrInterrupted }

// Runner runs plans against a store.
type Runner struct {
	Store store.Results
	// Progress receives live progress; nil for none.
	Progress *Progress

	latencyLog *metrics.LatencyLog // the plan's, while it runs
	// Notices, if set, is told what the user should know while the plan
	// runs (the store went away, and what is kept meanwhile).
	Notices io.Writer
	// interrupted is closed when the run's context ends (Ctrl-C).
	interrupted <-chan struct{}
	// sinkEvery is how often a run's seconds go to the store (0: the
	// default): every second for a load in segments, so that show
	// --follow draws the load live from the store.
	sinkEvery time.Duration
	// plan is the plan Run runs.
	plan Plan
	// lastSnaps are the targets' environments as last read.
	lastSnaps map[string]envSnap
	// readied are the targets read with a server up (targetReady).
	readied map[string]bool
}

// Run prepares the cells, runs the plan and returns the experiment's ID.
// Preparation errors (bad target, missing tool) are returned before
// anything is stored.
func (r *Runner) Run(ctx context.Context, plan Plan, cells []Cell) (id string, err error) {
	if err := checkSchedule(plan, cells); err != nil {
		return "", err
	}
	r.interrupted, r.plan = ctx.Done(), plan
	defer r.Progress.Close() // the report comes next, on a clean line
	r.sinkEvery = 0
	if plan.Segment.Split() && store.IsPostgres(r.Store.Path()) {
		r.sinkEvery = time.Second // a shared server: the load is drawn live (show --follow)
	}
	if plan.LatencyLog != "" {
		closeLog, err := r.openLatencyLog(plan)
		if err != nil {
			return "", err
		}
		defer func() {
			if cerr := closeLog(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	defer closeCells(cells)
	// An experiment is leased while it runs: a second runner must not
	// touch it while the first one lives. A resumed one is leased before
	// anything is prepared.
	held := &leases{r: r}
	defer held.release()
	if plan.Resume != "" {
		if ctx, err = held.take(ctx, plan.Resume); err != nil {
			return "", err
		}
	}
	if plan.Segment.Split() && plan.Resume == "" {
		// The print is taken before preparing: preparation resolves
		// parameters (an existing file's size) that must not make the
		// same load look like another.
		mine := fingerprint(plan, cells)
		again, err := r.joinLoad(ctx, plan, mine)
		if err != nil {
			return "", err
		}
		// Until this segment's experiment is stored, a failure (a
		// preparation that fails, Ctrl-C) leaves the group as it found
		// it: a group no experiment holds does not keep the load it was
		// first given, so the command can be corrected and run again.
		defer func() {
			if id == "" {
				_ = r.Store.LeaveLoad(context.WithoutCancel(ctx), plan.SegmentGroup, mine)
			}
		}()
		if again != "" {
			// This segment ran before and its runner is gone (a pod
			// restarted): it continues its own experiment and rejoins
			// the others at their next barrier.
			plan.Resume = again
			if ctx, err = held.take(ctx, plan.Resume); err != nil {
				return "", err
			}
		}
	}
	if err := prepareCells(ctx, cells); err != nil {
		return "", err
	}
	expID, stored, done, err := r.open(ctx, plan, cells)
	if err != nil {
		return "", err
	}
	if held.l == nil {
		if ctx, err = held.take(ctx, expID); err != nil {
			return "", err
		}
	}
	err = r.start(ctx, plan, done)
	if err == nil {
		err = r.execute(ctx, plan, expID, cells, stored, done)
	}
	return expID, r.finish(ctx, plan, expID, err)
}

// openLatencyLog opens --lat-log for the runs (added to, for a resumed
// experiment), and returns what closes it.
func (r *Runner) openLatencyLog(plan Plan) (func() error, error) {
	if plan.LatencyLogFio {
		if err := CheckFioLatencyLog(plan.LatencyLog); err != nil {
			return nil, &workload.InputError{Err: err}
		}
		r.latencyLog = metrics.NewFioLatencyLogs(plan.LatencyLog)
		return func() error { r.latencyLog = nil; return nil }, nil
	}
	if err := outpath.Check("--lat-log", plan.LatencyLog, metrics.IsLatencyLog); err != nil {
		return nil, &workload.InputError{Err: err}
	}
	l, err := metrics.CreateLatencyLog(plan.LatencyLog, plan.Resume != "")
	if err != nil {
		return nil, &workload.InputError{Err: fmt.Errorf("--lat-log %w", err)}
	}
	r.latencyLog = l
	return func() error {
		r.latencyLog = nil
		return l.Close()
	}, nil
}

// CheckFioLatencyLog checks the start of the files of a latency log in
// fio's format, PREFIX_lat.RUN.log: in a directory that is there, and not
// a directory itself.
func CheckFioLatencyLog(prefix string) error {
	if st, err := os.Stat(prefix); err == nil && st.IsDir() {
		return fmt.Errorf("--lat-log %s: a directory; with --lat-log-format fio give the start of each run's file's name, as fio's write_lat_log (%s writes %s)", prefix,
			filepath.Join(prefix, "lat"), metrics.FioLatencyLogPath(filepath.Join(prefix, "lat"), 1))
	}
	dir := filepath.Dir(prefix)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("--lat-log %s: no directory %s to write each run's file (%s) in", prefix, dir, filepath.Base(metrics.FioLatencyLogPath(prefix, 1)))
	}
	return nil
}

// checkSchedule refuses a schedule that cannot run: more runs than are
// bounded (laid out to the most rounds any cell may run, a search's), or
// stopping when decided in sequential order.
func checkSchedule(plan Plan, cells []Cell) error {
	rounds := plan.Rounds
	for _, c := range cells {
		rounds = max(rounds, c.Rounds)
	}
	if err := CheckRuns(len(cells), plan.Warmup, rounds); err != nil {
		return &workload.InputError{Err: err}
	}
	if plan.MinRounds > 0 && plan.Order == OrderSequential {
		return &workload.InputError{Err: errors.New("stopping when decided needs the random order: in sequential order a round is not every cell once")}
	}
	return nil
}

// prepareCells prepares every cell's workload that is prepared once.
func prepareCells(ctx context.Context, cells []Cell) error {
	for _, c := range cells {
		if c.PerStart || c.Calibrated {
			continue
		}
		if err := c.Workload.Prepare(ctx); err != nil {
			if ctx.Err() != nil {
				return ErrInterrupted
			}
			return err
		}
	}
	return nil
}

// closeCells closes what every cell prepared once.
func closeCells(cells []Cell) {
	for _, c := range cells {
		if !c.PerStart {
			_ = c.Workload.Close()
		}
	}
}

// finish stores how the experiment ended (err: what stopped it) — held
// while the store is away — and, for a segment, meets the others at the
// load's end: what is judged of it (gates, the report) is judged whole, by
// every segment alike.
func (r *Runner) finish(ctx context.Context, plan Plan, expID string, err error) error {
	status := "done"
	switch {
	case errors.Is(err, ErrInterrupted):
		status = store.StatusInterrupted
	case err != nil:
		status = store.StatusFailed
	}
	if ferr := r.Store.FinishExperiment(context.WithoutCancel(ctx), expID, status); ferr != nil {
		held := store.Unreachable(ferr) && !errors.Is(err, errStoreGone)
		if held {
			ferr = r.hold(ferr, "how the experiment ended", func() error { return r.Store.FinishExperiment(context.WithoutCancel(ctx), expID, status) })
		}
		switch {
		case err == nil:
			err = ferr
		case held: // what became of the end, after why it stopped
			err = errors.Join(err, ferr)
		}
	}
	if err == nil && plan.Segment.Split() && plan.Every == 0 {
		_, err = r.meet(ctx, plan, plan.SegmentGroup+" end", 0)
	}
	return err
}

// runKey identifies a scheduled run across a crash and a resume.
type runKey struct {
	cell   int
	warmup bool
	round  int
}

// open creates the experiment, or reopens the one to resume and lists the
// runs it already finished.
func (r *Runner) open(ctx context.Context, plan Plan, cells []Cell) (string, []store.Cell, map[runKey]bool, error) {
	if plan.Resume == "" {
		exp, stored, err := r.create(ctx, plan, cells)
		if err != nil {
			return "", nil, nil, err
		}
		return exp.ID, stored, map[runKey]bool{}, nil
	}
	d, err := r.Store.Load(ctx, plan.Resume)
	if err != nil {
		return "", nil, nil, err
	}
	if len(d.Cells) != len(cells) {
		return "", nil, nil, fmt.Errorf("resume %s: it has %d cells, the plan now has %d", plan.Resume, len(d.Cells), len(cells))
	}
	index := map[int64]int{}
	for i, c := range d.Cells {
		if c.Name != cells[i].Name || c.Variant != cells[i].Variant {
			return "", nil, nil, fmt.Errorf("resume %s: cell %d was %s/%s, the plan now has %s/%s", plan.Resume, i, c.Variant, c.Name, cells[i].Variant, cells[i].Name)
		}
		index[c.ID] = i
	}
	done := map[runKey]bool{}
	runs := slices.Clone(d.Runs)
	slices.SortStableFunc(runs, func(a, b store.Run) int { return a.Round - b.Round })
	for _, run := range runs {
		c := cells[index[run.CellID]]
		failed := run.Status == store.StatusFailed
		// A finding: its operations failed (see runOne).
		finding := failed && c.FailuresAreFindings && run.Result != nil && run.Result.Errors > 0
		if run.Status == store.StatusOK || (plan.KeepGoing && failed) || finding {
			done[runKey{index[run.CellID], run.Warmup, run.Round}] = true
		}
		if judgesWhole(plan, c, run.Warmup, run.Round) {
			// A split load's, merged again as when it ran; a run this
			// segment stored but had not met the others over yet, now.
			if run.Status == store.StatusOK || (plan.KeepGoing && failed) || finding {
				if err := r.wholeRun(ctx, plan, index[run.CellID], c, run.Warmup, run.Round); err != nil {
					return "", nil, nil, fmt.Errorf("resume %s: %s/%s round %d: %w", plan.Resume, c.Variant, c.Name, run.Round, err)
				}
			}
			continue
		}
		if c.Ran != nil && !run.Warmup && (run.Status == store.StatusOK || finding) {
			if err := c.Ran(run.Result, run.Status == store.StatusOK); err != nil {
				return "", nil, nil, fmt.Errorf("resume %s: %s/%s round %d: %w", plan.Resume, c.Variant, c.Name, run.Round, err)
			}
		}
		// What a finished calibration measured paces what is left.
		if c.Calibrate != nil && store.IsCalibration(run.Round) && run.Status == store.StatusOK {
			if err := c.Calibrate(run.Result); err != nil {
				return "", nil, nil, fmt.Errorf("resume %s: %s/%s: its calibration run: %w", plan.Resume, c.Variant, c.Name, err)
			}
		}
	}
	if err := r.Store.SetExperimentStatus(ctx, d.Experiment.ID, "running"); err != nil {
		return "", nil, nil, err
	}
	if err := r.Store.MarkCutRuns(ctx, d.Experiment.ID); err != nil {
		return "", nil, nil, err
	}
	return d.Experiment.ID, d.Cells, done, nil
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
	if plan.Segment.Split() {
		exp.SegmentGroup, exp.Segment = plan.SegmentGroup, plan.Segment.String()
	}
	stored := make([]store.Cell, len(cells))
	for i, c := range cells {
		params := c.Workload.Params()
		maps.Copy(params, c.Params)
		stored[i] = store.Cell{Index: i, Name: c.Name, Variant: c.Variant, Workload: c.Workload.Kind(), Params: params}
	}
	if err := r.Store.CreateExperiment(ctx, exp, stored); err != nil {
		return nil, nil, err
	}
	return exp, stored, nil
}

// start waits for the agreed start of a split load: --start-at, or the
// barrier every segment arrives at.
func (r *Runner) start(ctx context.Context, plan Plan, done map[runKey]bool) error {
	if plan.Resume != "" && (!plan.Segment.Split() || len(done) > 0) {
		// A resumed segment meets the others at the barrier of its next
		// run; one that finished nothing, at the start with them.
		return nil
	}
	at := plan.StartAt
	if at.IsZero() && plan.Segment.Split() {
		var err error
		if at, err = r.barrier(ctx, plan); err != nil {
			return err
		}
	}
	if at.IsZero() {
		return nil
	}
	if late := time.Since(at); late > time.Second {
		return fmt.Errorf("--start-at %s passed %v ago, before this segment was ready; give a later time", at.Format(time.RFC3339), late.Round(time.Second))
	}
	select {
	case <-time.After(time.Until(at)):
		return nil
	case <-ctx.Done():
		return ErrInterrupted
	}
}

// snapshot stores the environment of every distinct target of the cells.
// A target's environment read less than envFresh ago is stored again as
// read (with the time it was read): the snapshot before a round is the
// one after the round before it, and rounds of runs shorter than that
// read the machine once a second, not twice a run — a run of `true` in
// rounds of one spent a sixth of iolab's CPU reading it, a `sleep 0.05`
// a tenth.
func (r *Runner) snapshot(ctx context.Context, expID string, round int, warmup bool, phase string, cells []Cell) error {
	stored := phase
	if warmup {
		stored = "warmup-" + phase
	}
	if r.lastSnaps == nil {
		r.lastSnaps = map[string]envSnap{}
	}
	seen := map[string]bool{}
	for _, c := range cells {
		if seen[c.Target] {
			continue
		}
		seen[c.Target] = true
		snap, ok := r.lastSnaps[c.Target]
		if !ok || time.Since(snap.read) >= envFresh {
			captured := envinfo.Capture(c.Target)
			b, err := json.Marshal(captured)
			if err != nil {
				return fmt.Errorf("encode environment: %w", err)
			}
			snap = envSnap{takenAt: captured.TakenAt, read: time.Now(), json: b}
			r.lastSnaps[c.Target] = snap
		}
		if err := r.Store.SaveEnv(ctx, expID, store.EnvSnapshot{Round: round, Phase: stored, TakenAt: snap.takenAt, Snapshot: snap.json}); err != nil {
			return err
		}
	}
	return nil
}

// Server is an Around that may start a server the cell's target depends
// on — a variant's server that mounts an export at it.
type Server interface {
	// Serving says a server was started for the run.
	Serving() bool
}

// targetReady stores, once per experiment and target, c's target as read
// now that the run's server is ready — when its Around started one.
func (r *Runner) targetReady(ctx context.Context, expID string, round int, c Cell) {
	if s, ok := c.Around.(Server); !ok || !s.Serving() || c.Target == "" || r.readied[c.Target] {
		return
	}
	if r.readied == nil {
		r.readied = map[string]bool{}
	}
	r.readied[c.Target] = true
	captured := envinfo.Capture(c.Target)
	if b, err := json.Marshal(captured); err == nil {
		// Kept for the next write (store.SaveEnv): it cannot fail the run.
		_ = r.Store.SaveEnv(ctx, expID, store.EnvSnapshot{Round: round, Phase: store.PhaseReady, TakenAt: captured.TakenAt, Snapshot: b})
	}
}

// envSnap is a target's environment as last read.
type envSnap struct {
	takenAt time.Time // as stored
	read    time.Time // on the monotonic clock
	json    []byte
}

// envFresh is how long a read of a target's environment stands for it.
const envFresh = time.Second
