package lab

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/envinfo"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/observe"
	"github.com/iolab/iolab/internal/store"
	"github.com/iolab/iolab/internal/workload"
)

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

func (r *Runner) runOne(ctx context.Context, expID string, c Cell, run *store.Run, pos RunPosition) error {
	progress := r.Progress.Start(c.Name, pos)
	defer r.Progress.End()
	// The run is stored as running before it starts, and its seconds go
	// to the store as it goes: a 24-hour run keeps no day of seconds in
	// memory, and a killed one leaves what it measured (as interrupted).
	if err := r.Store.BeginRun(ctx, expID, run); err != nil {
		return err
	}
	res, err := r.measure(ctx, expID, c, run, progress)
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
func (r *Runner) measure(ctx context.Context, expID string, c Cell, run *store.Run, progress func(ops, bytes int64)) (*metrics.Result, error) {
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
	var runLog *metrics.LatencyLog // measured operations only
	closeLog := func() error { return nil }
	if r.latencyLog != nil && !run.Warmup {
		var err error
		if runLog, closeLog, err = r.latencyLog.ForRun(run.ID); err != nil {
			stopEnv()
			behind.Close()
			return nil, err
		}
		rctx = metrics.WithLatencyLog(rctx, runLog, run.ID)
	}
	ready := func() { r.targetReady(ctx, expID, run.Round, c) }
	res, err := r.runAround(rctx, c, ready, progress, behind.Server)
	if cerr := closeLog(); cerr != nil && err == nil {
		err = cerr
	}
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
	if runLog != nil && err == nil {
		err = runLog.Err() // the run's copy of its latencies is not whole
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
	if run.Status == store.StatusOK && store.IsCalibration(run.Round) && !whole {
		if err := c.Calibrate(res); err != nil {
			run.Status, run.Error = store.StatusFailed, "calibration: "+err.Error()
		}
	}
	// A load the target could not keep up with: operations it still held
	// at the end of the grace period were cut, each counted as an error
	// (driver.Run) — what the run measured at that load, as a timeout is.
	cut := errors.Is(err, driver.ErrGraceExceeded) && res != nil && res.Errors > 0
	finding = c.FailuresAreFindings && (err == nil || cut) && run.Status == store.StatusFailed
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

// runAround runs the workload between the cell's BeforeRun and AfterRun,
// calling ready once BeforeRun has readied the run; a PerStart workload is prepared after BeforeRun started its server, and
// closed before AfterRun stops it.
func (r *Runner) runAround(ctx context.Context, c Cell, ready func(), progress func(ops, bytes int64), each func(metrics.ServerSecond)) (*metrics.Result, error) {
	if c.Around != nil {
		r.Progress.Step("preparing the run (hooks, the variant's server)")
		if err := c.Around.BeforeRun(ctx); err != nil {
			_ = c.Around.AfterRun(context.WithoutCancel(ctx))
			return nil, err
		}
		ready()
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
