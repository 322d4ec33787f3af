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
	"slices"
	"strings"
	"time"

	"github.com/iolab/iolab/internal/envinfo"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/observe"
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
	// Calibrate, if set, makes the cell's first run its calibration: it
	// runs after the variants' own warm-up runs and before any other, is
	// stored as a warm-up run of round store.CalibrationRound, and what it
	// measured is handed to Calibrate — the stored run's, on resume. An
	// error fails the run. (A curve's flat-out cell: its rate paces the
	// curve's other cells.)
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
	// to (metrics.LatencyLog), as the run it belongs to.
	LatencyLog string
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

// leases holds the lease of the experiment a Run runs, once taken.
type leases struct {
	r *Runner
	l *lease
}

// take leases the experiment; the context returned ends when the lease
// is lost.
func (h *leases) take(ctx context.Context, expID string) (context.Context, error) {
	l, err := h.r.acquire(ctx, expID)
	if err != nil {
		return ctx, err
	}
	h.l = l
	return l.ctx, nil
}

func (h *leases) release() {
	if h.l != nil {
		h.l.release()
	}
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
		if c.Calibrate != nil && run.Round == store.CalibrationRound && run.Status == store.StatusOK {
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

// joinLoad refuses, before anything is prepared or stored, a segment
// (whose load's fingerprint is mine) that is not of the load its group
// holds: one whose segments run another load
// or split it another number of ways, or a group that already holds this
// segment finished or running (its barriers would open at once on that
// load's arrivals, and show would merge the two). A segment the group
// holds unfinished, whose runner is gone, is this one started again: its
// experiment's ID is returned, to continue.
func (r *Runner) joinLoad(ctx context.Context, plan Plan, mine string) (again string, err error) {
	n, held, err := r.Store.JoinLoad(ctx, plan.SegmentGroup, plan.Segment.N, mine)
	if err != nil {
		return "", err
	}
	if n != plan.Segment.N {
		return "", &workload.InputError{Err: fmt.Errorf("--segment %s: the load of --segment-group %s is split %d ways, not %d; give the segment as I/%d, or the load a group of its own",
			plan.Segment, plan.SegmentGroup, n, plan.Segment.N, n)}
	}
	if diff := fingerprintDiff(held, mine); diff != "" {
		return "", &workload.InputError{Err: fmt.Errorf("--segment %s: --segment-group %s runs another load: %s; run the same command (or plan) in every segment, or give this load a group of its own",
			plan.Segment, plan.SegmentGroup, diff)}
	}
	members, err := r.Store.Members(ctx, plan.SegmentGroup)
	if err != nil {
		return "", err
	}
	for _, m := range members {
		if m.Segment != plan.Segment.String() {
			continue
		}
		if m.Status != "done" && m.Gone() != "" {
			again = m.ID // the latest, if it was started again before
			continue
		}
		return "", &workload.InputError{Err: fmt.Errorf("--segment-group %s already holds segment %s (experiment %s, %s): give each load a group of its own",
			plan.SegmentGroup, m.Segment, m.ID, m.Status)}
	}
	return again, nil
}

// barrier meets the load's other segments before its first run: all
// start a second after the last arrived.
func (r *Runner) barrier(ctx context.Context, plan Plan) (time.Time, error) {
	return r.meet(ctx, plan, plan.SegmentGroup, time.Second)
}

// meetBeforeRun meets the other segments again before the schedule's
// entry i, so run i of every segment measures the same seconds (runs of
// a fixed count end at different times on different hosts).
func (r *Runner) meetBeforeRun(ctx context.Context, plan Plan, i int) error {
	at, err := r.meet(ctx, plan, fmt.Sprintf("%s run %d", plan.SegmentGroup, i), 4*pollEvery(plan.Segment.N))
	if err != nil {
		return err
	}
	select {
	case <-time.After(time.Until(at)): // at once when the start passed while this segment looked
		return nil
	case <-ctx.Done():
		return ErrInterrupted
	}
}

// pollEvery is how often a segment at a barrier reads the store: 10
// times a second, 4 in a load of over 10 segments (100 segments then
// read 400 times a second, not 1,000). A run's barrier opens 4 polls after
// the last arrival, so every segment has read it by then.
func pollEvery(segments int) time.Duration {
	if segments > 10 {
		return 250 * time.Millisecond
	}
	return 100 * time.Millisecond
}

// meet records this segment's arrival at a barrier of its load (point
// names it) and waits for the others; all start delay after the last
// arrived, a time every segment reads from the store. It gives up, naming
// them, when segments that have not arrived ended or died, or after the
// barrier timeout.
func (r *Runner) meet(ctx context.Context, plan Plan, point string, delay time.Duration) (time.Time, error) {
	host, _ := os.Hostname()
	if err := r.Store.ArriveAtBarrier(ctx, point, plan.Segment.I, host); err != nil {
		return time.Time{}, err
	}
	timeout := plan.BarrierTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	deadline := time.Now().Add(timeout)
	poll := pollEvery(plan.Segment.N)
	looked := time.Now()    // for the missing that ended or died, every second
	var stoppedAt time.Time // since when some segment is stopped, waited for
	for {
		arrived, last, err := r.Store.Barrier(ctx, point)
		if err != nil {
			return time.Time{}, err
		}
		if len(arrived) >= plan.Segment.N {
			return last.Add(delay), nil
		}
		var missing []string
		for i := range plan.Segment.N {
			if !slices.Contains(arrived, i) {
				missing = append(missing, segment.Segment{I: i, N: plan.Segment.N}.String())
			}
		}
		if time.Since(looked) >= time.Second {
			looked = time.Now()
			gone, stopped, err := r.gone(ctx, plan, missing, point != plan.SegmentGroup)
			if err != nil {
				return time.Time{}, err
			}
			if len(gone) > 0 {
				return time.Time{}, fmt.Errorf("segment %s of %s: %s, so the load cannot run whole; this segment stops too (what ran is stored)",
					plan.Segment, plan.SegmentGroup, strings.Join(gone, "; "))
			}
			// A segment whose runner died may be started again (a pod
			// restarted, a --resume): it is waited for a while.
			switch {
			case len(stopped) == 0:
				stoppedAt = time.Time{}
			case stoppedAt.IsZero():
				stoppedAt = time.Now()
			}
			if len(stopped) > 0 && time.Since(stoppedAt) >= plan.RejoinTimeout {
				return time.Time{}, fmt.Errorf("segment %s of %s: %s, and was not started again within %v (--rejoin-timeout), so the load cannot run whole; this segment stops too (what ran is stored)",
					plan.Segment, plan.SegmentGroup, strings.Join(stopped, "; "), plan.RejoinTimeout)
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("segment %s of %s: segments %s never arrived within %v; start them (or give --barrier-timeout more)",
				plan.Segment, plan.SegmentGroup, strings.Join(missing, ", "), timeout)
		}
		select {
		case <-time.After(poll):
		case <-ctx.Done():
			return time.Time{}, ErrInterrupted
		}
	}
}

// gone says which of the missing segments will not arrive: gone, those
// that never will — their experiment finished, or (after the first run)
// they began none; stopped, those whose runner died or stopped before
// the end, which come back if started again. Before the first run a
// segment that began nothing may still come.
func (r *Runner) gone(ctx context.Context, plan Plan, missing []string, started bool) (gone, stopped []string, err error) {
	members, err := r.Store.Members(ctx, plan.SegmentGroup)
	if err != nil {
		return nil, nil, err
	}
	for _, seg := range missing {
		var why []string
		began, live, done := false, false, false
		for _, m := range members {
			if m.Segment != seg {
				continue
			}
			began = true
			if g := m.Gone(); g == "" {
				live = true // it may still come
			} else {
				why, done = append(why, g), done || m.Status == "done"
			}
		}
		switch {
		case live:
		case began && done:
			gone = append(gone, fmt.Sprintf("segment %s %s", seg, strings.Join(why, ", ")))
		case began:
			stopped = append(stopped, fmt.Sprintf("segment %s %s", seg, strings.Join(why, ", ")))
		case started:
			gone = append(gone, fmt.Sprintf("segment %s never began", seg))
		}
	}
	return gone, stopped, nil
}

// execute runs the schedule's entries that are not done yet.
func (r *Runner) execute(ctx context.Context, plan Plan, expID string, cells []Cell, stored []store.Cell, done map[runKey]bool) error {
	entries := scheduleCells(plan, cells)
	prepared := map[int]bool{}
	steady := false // the precondition was met: no more warm-up rounds
	if plan.Preconditioned != nil && plan.Resume != "" {
		var err error
		if steady, err = plan.Preconditioned(ctx, expID); err != nil {
			return err
		}
	}
	var failed, gated []error
	ran, total := 0, 0
	for _, e := range entries {
		if !done[runKey{e.Cell, e.Warmup, e.Round}] {
			total++
		}
	}
	for i, e := range entries {
		if skipped(e, cells, done, steady) {
			continue
		}
		firstOfBlock := i == 0 || entries[i-1].Block != e.Block
		lastOfBlock := i == len(entries)-1 || entries[i+1].Block != e.Block
		if firstOfBlock {
			if err := r.beginBlock(ctx, plan, expID, e, cells); err != nil {
				return err
			}
		}
		if err := r.waitTurn(ctx, plan, i, ran > 0); err != nil {
			return err
		}
		c := cells[e.Cell]
		if c.Calibrated && !c.PerStart && !prepared[e.Cell] {
			if err := r.prepareCalibrated(ctx, c); err != nil {
				return err
			}
			prepared[e.Cell] = true
		}
		run := &store.Run{CellID: stored[e.Cell].ID, Round: e.Round, Slot: e.Slot, Warmup: e.Warmup}
		round := max(e.Round, 0) // a variant's own warm-up runs count as round 0
		if !e.Warmup {
			round += plan.Warmup
		}
		rctx := workload.WithRunInfo(ctx, workload.RunInfo{Run: i, Round: round})
		err := r.runOne(rctx, expID, c, run, RunPosition{Round: e.Round, Rounds: max(plan.Rounds, c.Rounds), Warmup: e.Warmup, Done: ran, Total: total, Variant: c.Variant})
		ran++
		var gate *gateError
		switch {
		case errors.As(err, &gate):
			gated = append(gated, err)
		case errors.Is(err, ErrInterrupted):
			return err
		case errors.As(err, new(*findingError)):
			// What the run measured, not a failure of the experiment.
		case err != nil && !plan.KeepGoing:
			return err
		case err != nil:
			failed = append(failed, err)
		}
		if err := r.wholeRun(ctx, plan, e.Cell, c, e.Warmup, e.Round); err != nil {
			return err
		}
		if lastOfBlock {
			stop, err := r.afterBlock(ctx, plan, expID, e, cells, &steady)
			if err != nil {
				return err
			}
			if stop {
				break
			}
		}
	}
	return keptGoing(failed, gated)
}

// keptGoing is what the runs that failed (--keep-going) or failed their
// gate say once every run has ended.
func keptGoing(failed, gated []error) error {
	if len(failed) > 0 {
		return fmt.Errorf("%d runs failed (kept going); the first: %w", len(failed), failed[0])
	}
	if len(gated) > 0 {
		return fmt.Errorf("%d runs failed their gate; the first: %w", len(gated), gated[0])
	}
	return nil
}

// skipped says whether entry e does not run: it ran before (a resume),
// its cell's search has ended, or it is a warm-up round the precondition
// (steady) made needless.
func skipped(e Entry, cells []Cell, done map[runKey]bool, steady bool) bool {
	if done[runKey{e.Cell, e.Warmup, e.Round}] {
		return true
	}
	if d := cells[e.Cell].Done; d != nil && d() {
		return true
	}
	return steady && e.Warmup && e.Round >= 0
}

// waitTurn waits for run i's turn: a cooldown after a run, the run's slot
// by the clock (--run-every), or, in segments, the barrier every
// segment's run i starts at.
func (r *Runner) waitTurn(ctx context.Context, plan Plan, i int, afterRun bool) error {
	if afterRun && plan.Cooldown > 0 {
		r.Progress.Phase(fmt.Sprintf("cooling down %v", plan.Cooldown))
		select {
		case <-time.After(plan.Cooldown):
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	switch {
	case i > 0 && plan.Every > 0:
		// In step by the clock: entry i's slot (at once if it passed).
		select {
		case <-time.After(time.Until(plan.StartAt.Add(time.Duration(i) * plan.Every))):
		case <-ctx.Done():
			return ErrInterrupted
		}
	case i > 0 && plan.Segment.Split():
		// Every run after the first at a barrier of its own, a resumed
		// segment's too: run i of every segment measures the same
		// seconds. (A run cut by its runner's death is redone alone,
		// past its barrier; the merge calls it partial.)
		return r.meetBeforeRun(ctx, plan, i)
	}
	return nil
}

// prepareCalibrated prepares a cell whose rate its calibration set, before
// its first run.
func (r *Runner) prepareCalibrated(ctx context.Context, c Cell) error {
	r.Progress.Phase("preparing " + c.Name + " at the rate its calibration set")
	if err := c.Workload.Prepare(ctx); err != nil {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		return fmt.Errorf("%s/%s: %w", c.Variant, c.Name, err)
	}
	return nil
}

// afterBlock ends a block of runs (e its last) and judges what is judged
// after one: whether the precondition is met (steady), whether the
// experiment is decided (stop). In segments, judged on the whole load,
// once every segment stored its block: every segment judges it alike.
func (r *Runner) afterBlock(ctx context.Context, plan Plan, expID string, e Entry, cells []Cell, steady *bool) (stop bool, err error) {
	if err := r.endBlock(ctx, plan, expID, e, cells); err != nil {
		return false, err
	}
	preconditioning := plan.Preconditioned != nil && e.Warmup && e.Round >= 0 && !*steady
	if (preconditioning || decides(plan, e)) && plan.Segment.Split() {
		if _, err := r.meet(ctx, plan, fmt.Sprintf("%s judged block %d", plan.SegmentGroup, e.Block), 0); err != nil {
			return false, err
		}
	}
	if preconditioning {
		if *steady, err = plan.Preconditioned(ctx, expID); err != nil {
			return false, err
		}
	}
	return r.decided(ctx, plan, expID, e)
}

// decided says whether an experiment that stops when decided may stop
// after the round e ended.
func (r *Runner) decided(ctx context.Context, plan Plan, expID string, e Entry) (bool, error) {
	if !decides(plan, e) {
		return false, nil
	}
	return plan.Decided(ctx, expID)
}

// decides says whether the experiment may stop after the entry's block.
func decides(plan Plan, e Entry) bool {
	return plan.MinRounds > 0 && plan.Decided != nil && !e.Warmup && e.Round+1 >= plan.MinRounds && e.Round+1 < plan.Rounds
}

// errStoreGone marks an error after which the store is not waited for
// again: it did not return within holdFor. Its text is empty: the error
// it is wrapped in says it.
var errStoreGone = errors.New("")

// holdFor is how long a runner whose store went away past its grace
// keeps what it measured, trying to write it, before it gives it up.
const holdFor = 10 * time.Minute

// hold tries write until the store takes it (every few seconds, for up to
// holdFor, until Ctrl-C), saying so on Notices: the store went away (why)
// while what (a run just measured, the experiment's end) was still to be
// written; write must not end with the run's context (the wait between
// tries ends on Ctrl-C). It returns why, with what became of it.
func (r *Runner) hold(why error, what string, write func() error) error {
	if r.Notices != nil {
		fmt.Fprintf(r.Notices, "iolab: %v\niolab: no more runs; %s is kept, to be written when the store returns (for up to %v; Ctrl-C gives it up)\n", why, what, holdFor)
	}
	deadline := time.Now().Add(holdFor)
	for {
		err := write()
		switch {
		case err == nil:
			return fmt.Errorf("stopped: %w; %s was written when the store returned", why, what)
		case !store.Unreachable(err):
			return fmt.Errorf("stopped: %w; then %s could not be written: %w", why, what, err)
		case time.Now().After(deadline):
			return fmt.Errorf("stopped: %w; %s was lost: the store did not return within %v%w", why, what, holdFor, errStoreGone)
		}
		select {
		case <-time.After(2 * time.Second):
		case <-r.interrupted:
			return fmt.Errorf("stopped: %w; %s was given up (interrupted)", why, what)
		}
	}
}

// findingError is a failed run of a cell whose failures are findings.
type findingError struct{ err error }

func (e *findingError) Error() string { return e.err.Error() }
func (e *findingError) Unwrap() error { return e.err }

// gateError is a stored, good run that missed a criterion the user
// enforces (workload.Gater).
type gateError struct{ err error }

func (e *gateError) Error() string { return e.err.Error() }
func (e *gateError) Unwrap() error { return e.err }

func (r *Runner) beginBlock(ctx context.Context, plan Plan, expID string, e Entry, cells []Cell) error {
	if err := r.snapshot(ctx, expID, e.Round, e.Warmup, "before", cells); err != nil {
		return err
	}
	if plan.BeforeRound != nil {
		return plan.BeforeRound(ctx)
	}
	return nil
}

func (r *Runner) endBlock(ctx context.Context, plan Plan, expID string, e Entry, cells []Cell) error {
	if plan.AfterRound != nil {
		if err := plan.AfterRound(ctx); err != nil {
			return err
		}
	}
	return r.snapshot(ctx, expID, e.Round, e.Warmup, "after", cells)
}

func (r *Runner) runOne(ctx context.Context, expID string, c Cell, run *store.Run, pos RunPosition) error {
	progress := r.Progress.Start(c.Name, pos)
	defer r.Progress.End()
	// The run is stored as running before it starts, and its seconds go
	// to the store as it goes: a 24-hour run keeps no day of seconds in
	// memory, and a killed one leaves what it measured (as interrupted).
	if err := r.Store.BeginRun(ctx, expID, run); err != nil {
		return err
	}
	res, err := r.measure(ctx, c, run, progress)
	finding := r.judgeRun(ctx, c, run, res, err)
	if run.Result == nil { // the run produced nothing, but its failure is a fact to keep
		run.Result = &metrics.Result{Start: run.EndedAt}
	}
	derived := metrics.RunMetrics(run.Result)
	if err := r.Store.SaveRun(ctx, expID, run, derived); err != nil {
		if !store.Unreachable(err) {
			return err
		}
		// The store has been away past its grace: no more runs, but the
		// run just measured is written when the store returns.
		return r.hold(err, "the run it had just measured", func() error {
			return r.Store.SaveRun(context.WithoutCancel(ctx), expID, run, derived)
		})
	}
	if m, ok := c.Workload.(workload.Manifester); ok {
		if err := r.saveManifest(ctx, expID, run, m); err != nil {
			return err
		}
	}
	return runError(c, run, finding)
}

// measure runs the cell once, its seconds (the client's, the server's, the
// machine's) going to the store as it goes, from a writer of their own,
// never in the run's way: a store that pauses holds up their writing, not
// the run. It sets when the run ended.
func (r *Runner) measure(ctx context.Context, c Cell, run *store.Run, progress func(ops, bytes int64)) (*metrics.Result, error) {
	behind := newSeriesWriter(ctx, r.Store, run.ID)
	// The machine's seconds: what waited for a CPU, memory or I/O while
	// this run ran, and when — the evidence that names the cause of noise.
	watched := false
	var peaks [3]float64 // the worst second for CPU, memory, I/O
	stopEnv := envinfo.WatchStall(time.Second, func(sec metrics.EnvSecond) {
		watched = true
		for i, v := range [3]float64{sec.CPUStall, sec.MemoryStall, sec.IOStall} {
			peaks[i] = max(peaks[i], v)
		}
		behind.Env(sec)
	})
	rctx := metrics.WithSecondSink(ctx, behind.Client, r.sinkEvery)
	if r.latencyLog != nil && !run.Warmup { // measured operations only
		rctx = metrics.WithLatencyLog(rctx, r.latencyLog, run.ID)
	}
	res, err := r.runAround(rctx, c, progress, behind.Server)
	stopEnv()
	run.EndedAt = time.Now()
	if res != nil && watched {
		if res.Extra == nil {
			res.Extra = map[string]float64{}
		}
		// The worst second of each; when it was is in the stored series.
		res.Extra["env_cpu_stall_peak"], res.Extra["env_memory_stall_peak"], res.Extra["env_io_stall_peak"] = peaks[0], peaks[1], peaks[2]
	}
	client, server, env, held, storeErr := behind.Close()
	if res != nil && (held > heldNotice || storeErr != nil) {
		// What the store could not take is saved with the run's record;
		// the run itself is as measured.
		res.Series = append(client, res.Series...)
		res.ServerSeries, res.EnvSeries = server, env
		res.Notes = append(res.Notes, heldNote(held, storeErr))
	}
	if r.latencyLog != nil && !run.Warmup && err == nil {
		err = r.latencyLog.Err() // the run's copy of its latencies is not whole
	}
	return res, err
}

// judgeRun sets how the run went (err: what ended it): interrupted,
// failed, or ok — and a calibration that cannot pace anything, or a run
// its cell's search refuses, failed too. It says whether a failure is a
// finding: operations the target could not serve, not a run that could
// not measure (its server did not start).
func (r *Runner) judgeRun(ctx context.Context, c Cell, run *store.Run, res *metrics.Result, err error) (finding bool) {
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
	whole := judgesWhole(r.plan, c, run.Warmup, run.Round) // judged after, merged (wholeRun)
	if run.Status == store.StatusOK && run.Round == store.CalibrationRound && !whole {
		if err := c.Calibrate(res); err != nil {
			run.Status, run.Error = store.StatusFailed, "calibration: "+err.Error()
		}
	}
	finding = c.FailuresAreFindings && err == nil && run.Status == store.StatusFailed
	if c.Ran != nil && !run.Warmup && !whole && (run.Status == store.StatusOK || finding) {
		if err := c.Ran(res, run.Status == store.StatusOK); err != nil {
			run.Status, run.Error, finding = store.StatusFailed, err.Error(), false
		}
	}
	return finding
}

// runError is what a stored run says to the experiment: interrupted, a
// failure (or a finding), a gate it failed, or nothing.
func runError(c Cell, run *store.Run, finding bool) error {
	label := c.Name
	if c.Variant != "" {
		label = c.Variant + "/" + c.Name
	}
	switch run.Status {
	case store.StatusInterrupted:
		return ErrInterrupted
	case store.StatusFailed:
		if finding {
			return &findingError{fmt.Errorf("%s: %s", label, run.Error)}
		}
		return fmt.Errorf("%s: %s", label, run.Error)
	}
	if g, ok := c.Workload.(workload.Gater); ok && !run.Warmup {
		if err := g.Gate(run.Result); err != nil {
			return &gateError{fmt.Errorf("%s round %d: %w", label, run.Round, err)}
		}
	}
	return nil
}

// saveManifest stores the objects a run left in place.
func (r *Runner) saveManifest(ctx context.Context, expID string, run *store.Run, m workload.Manifester) error {
	seed, objs := m.Manifest()
	if len(objs) == 0 {
		return nil
	}
	rows := make([]store.Object, len(objs))
	for i, o := range objs {
		rows[i] = store.Object{CellID: run.CellID, Key: o.Key, Size: o.Size, Seed: o.Seed, ContentSeed: seed}
	}
	return r.Store.SaveObjects(ctx, expID, run.ID, rows)
}

// runAround runs the workload between the cell's BeforeRun and AfterRun;
// a PerStart workload is prepared after BeforeRun started its server, and
// closed before AfterRun stops it.
func (r *Runner) runAround(ctx context.Context, c Cell, progress func(ops, bytes int64), each func(metrics.ServerSecond)) (*metrics.Result, error) {
	if c.Around != nil {
		r.Progress.Step("preparing the run (hooks, the variant's server)")
		if err := c.Around.BeforeRun(ctx); err != nil {
			_ = c.Around.AfterRun(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	var res *metrics.Result
	var err error
	if c.PerStart {
		r.Progress.Step("setting up the workload against the server")
		if err = c.Workload.Prepare(ctx); err != nil {
			err = fmt.Errorf("variant %s: setting up the %s workload against its server: %w", c.Variant, c.Workload.Kind(), err)
		}
	}
	if err == nil {
		var stopObserving func() observe.Observation
		if o, ok := c.Around.(Observer); ok {
			stopObserving = o.Observe(each)
		}
		stall := envinfo.ReadStall()
		r.Progress.Step("")
		res, err = c.Workload.Run(ctx, progress)
		// What waited for a CPU, memory or I/O during the run, anything on
		// the machine: the evidence that names the cause of noise.
		if cpu, mem, io, ok := envinfo.ReadStall().Since(stall); ok && res != nil {
			if res.Extra == nil {
				res.Extra = map[string]float64{}
			}
			res.Extra["env_cpu_stall"], res.Extra["env_memory_stall"], res.Extra["env_io_stall"] = cpu, mem, io
		}
		if stopObserving != nil {
			seen := stopObserving()
			if res != nil && len(seen.Extra) > 0 {
				if res.Extra == nil {
					res.Extra = map[string]float64{}
				}
				maps.Copy(res.Extra, seen.Extra)
			}
			if res != nil {
				res.Profiles = seen.Profiles
			}
			if seen.Err != nil && err == nil {
				err = seen.Err
			}
		}
	}
	if c.PerStart {
		_ = c.Workload.Close()
	}
	if c.Around != nil {
		r.Progress.Step("finishing the run (stopping the variant's server, hooks)")
		if aerr := c.Around.AfterRun(context.WithoutCancel(ctx)); aerr != nil && err == nil {
			err = aerr
		}
	}
	return res, err
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

// envSnap is a target's environment as last read.
type envSnap struct {
	takenAt time.Time // as stored
	read    time.Time // on the monotonic clock
	json    []byte
}

// envFresh is how long a read of a target's environment stands for it.
const envFresh = time.Second
