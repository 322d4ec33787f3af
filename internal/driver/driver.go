// Package driver runs the workers of one load-generating run and turns their
// records into a metrics.Result.
//
// A run has two stops, as in k6: at the soft stop (runtime elapsed, budget
// spent, or the caller's context cancelled) workers stop issuing new
// operations and finish those in flight; if they have not returned a grace
// period later, the run ends without them and says so. Client CPU time is
// read from getrusage around the run, with the time its threads waited for a
// CPU (schedstat), and the cost of timing one operation is
// measured before it starts, so the report can show how much of each latency
// is the tool's own.
package driver

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/metrics"
)

// Stop is checked by workers before each new operation; it costs one atomic
// load, far less than a channel select. A worker waiting for its next
// paced start waits on it too (SleepUntil), so that the run ends when
// its last operation does, not when its idle workers next look.
type Stop struct {
	flag atomic.Bool
	once sync.Once
	ch   chan struct{} // closed at the stop
	// end is the clock reading at which the runtime ends (0: none): a
	// start due then or later is past the run, however late the stop
	// comes.
	end int64
	// endedWaitNs is the wait for a CPU of the workers' threads that
	// ended with them (ThreadEnds).
	endedWaitNs atomic.Int64
}

// ThreadEnds is said, as it returns, by a worker locked to its thread
// for good, whose thread ends with it (a private descriptor table, a
// single-issuer ring): the process's threads read at the end of the run
// no longer include it, so its wait for a CPU is counted here.
func (s *Stop) ThreadEnds() {
	if ns, ok := threadWaitNs(); ok {
		s.endedWaitNs.Add(ns)
	}
}

// Stopped reports whether workers should stop issuing operations.
func (s *Stop) Stopped() bool { return s.flag.Load() }

// Past says an operation due at due (a clock reading) lies at or after
// the runtime's end: it never begins, however late the stop comes (Go's
// timer fires it about a millisecond after the end).
func (s *Stop) Past(due int64) bool { return s.end > 0 && due >= s.end }

func (s *Stop) stop() {
	if !s.flag.Swap(true) {
		close(s.done())
	}
}

// done is closed at the stop.
func (s *Stop) done() chan struct{} {
	s.once.Do(func() { s.ch = make(chan struct{}) })
	return s.ch
}

// sleep waits d, or until the stop if that comes first.
func (s *Stop) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.done():
	}
}

// Worker runs until stop is set or its own budget is spent, recording every
// operation in rec. It returns an error only for a failure that ends the
// worker (already counted in rec); returning early is not an error. ctx
// ends at the hard stop: an operation it cuts is an error of its kind
// (a hung operation is never "no errors").
type Worker func(ctx context.Context, worker int, clock metrics.Clock, stop *Stop, rec *metrics.Recorder) error

// Options control one run.
type Options struct {
	Workers int
	// Runtime is the time-based duration; 0 means until every worker has
	// spent its budget.
	Runtime time.Duration
	// Steady, when enabled, ends a time-based run before its Runtime once
	// its seconds are steady; the result's extra steady says whether they
	// were (1) or the run went to its Runtime (0), steady_at_s when.
	Steady SteadyState
	// Grace is how long workers may take to finish in-flight operations
	// after the soft stop (default 10s).
	Grace time.Duration
	// ProcPerWorker gives every worker a P of its own, for workers that
	// block in system calls (file I/O); network workers, which park on the
	// poller, run faster with the default of one P per CPU.
	ProcPerWorker bool
	// Progress, if set, is called about twice a second with the operations
	// and bytes recorded so far.
	Progress func(elapsed time.Duration, ops, bytes int64)
	// Ramp is how long workers run before anything is measured (fio's
	// ramp_time): the clock's zero is Ramp after they start, operations
	// that end before it are not recorded, and Runtime, the duration and
	// the CPU count from it.
	Ramp time.Duration
	// Setup, if set, runs in each worker's goroutine before the run's clock
	// starts (buffers mapped and filled, files opened): the clock starts
	// when every worker is set up, so no setup is timed and the first
	// operation of each worker can start at time 0. A Setup error ends the
	// run before it starts.
	Setup func(worker int) error
}

// maxProcs caps the Ps given to workers (one each, plus one).
const maxProcs = 1024

// ErrGraceExceeded is returned when workers did not stop within the grace period.
var ErrGraceExceeded = errors.New("workers did not finish in-flight operations within the grace period")

// Run runs opts.Workers copies of w and merges what they recorded. When ctx
// is cancelled the run stops early and Run returns the partial result with
// ctx's error, so the caller can store it as interrupted.
func Run(ctx context.Context, opts Options, w Worker) (*metrics.Result, error) {
	if opts.Workers < 1 {
		return nil, fmt.Errorf("driver: %d workers", opts.Workers)
	}
	grace := opts.Grace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	series := metrics.NewSeries()
	recs := make([]*metrics.Recorder, opts.Workers)
	for i := range recs {
		recs[i] = series.NewRecorder()
	}
	// One P per worker: a worker blocked in a system call (io_uring_enter
	// waiting for completions, pread on a disk) then never holds up the
	// others, and the runtime need not hand Ps between threads, so the
	// kernel schedules worker threads the way it schedules fio's processes.
	if opts.ProcPerWorker {
		defer HoldProcs(min(opts.Workers, maxProcs-1))()
	}
	overhead := TimingOverhead()
	var stop Stop
	hardCtx, hardCancel := context.WithCancel(context.Background())
	defer hardCancel()
	ws := startWorkers(hardCtx, opts, w, &stop, recs)
	if err := ws.setUp(); err != nil {
		return nil, err
	}
	clock := metrics.NewClockAt(time.Now().Add(opts.Ramp))
	for _, rec := range recs {
		rec.LogTo(ctx, clock)
		rec.Joined(clock.Began())
	}
	cpu0 := rusageAt(opts.Ramp)
	stop.end = int64(opts.Runtime)
	done := ws.start(clock)
	errs := ws.errs

	sink, drainEvery := metrics.SecondSink(ctx)
	var steady *steadyJudge
	if opts.Steady.Enabled() {
		steady = newSteadyJudge(opts.Steady)
	}
	interrupted, graceExceeded := waitSoftStop(ctx, opts, clock, series, done, &stop, sink, drainEvery, steady)
	graceExceeded = graceExceeded || !waitGrace(done, grace, hardCancel)
	duration := time.Duration(clock.Now())
	cpu1 := rusage()
	if graceExceeded {
		// Workers whose operations honour the hard stop (network ones)
		// return at once, each operation cut counted as an error of its
		// kind: the run keeps its figures.
		select {
		case <-done:
		case <-time.After(cutWait):
			// Workers still blocked in a system call own their
			// recorders; nothing of theirs can be merged safely.
			return nil, fmt.Errorf("run stopped after %v: %w", duration.Round(time.Millisecond), ErrGraceExceeded)
		}
	}
	if duration <= 0 {
		return nil, fmt.Errorf("the run ended %v into the %v ramp, before anything was measured; give the job more work than the ramp",
			(opts.Ramp + duration).Round(time.Millisecond), opts.Ramp)
	}
	for _, rec := range recs {
		rec.Close()
	}
	res := metrics.Merge(recs, series, clock.Start(), duration)
	chargeCPU(res, cpu0(), cpu1, &stop)
	res.TimingOverheadNs = overhead
	steady.mark(res)
	if graceExceeded {
		return res, fmt.Errorf("run stopped after %v, its operations still in flight cut: %w", duration.Round(time.Millisecond), ErrGraceExceeded)
	}
	if interrupted {
		return res, ctx.Err()
	}
	return res, errors.Join(errs...)
}

// mark says in the run's figures whether it was steady (1), and from
// when, or went to its runtime (0); nothing without a criterion (nil).
func (s *steadyJudge) mark(res *metrics.Result) {
	if s == nil {
		return
	}
	res.Extra = metrics.WithExtra(res.Extra, map[string]float64{"steady": 0})
	if s.At >= 0 {
		res.Extra["steady"], res.Extra["steady_at_s"] = 1, float64(s.At)
	}
}

// workers are a run's workers, each set up before the clock starts and
// then held until it has.
type workers struct {
	wg, setUps sync.WaitGroup
	errs       []error
	begin      chan struct{}
	clock      metrics.Clock // set before begin is closed
	aborted    bool          // a setup failed; set before begin is closed
}

// startWorkers starts opts.Workers copies of w, each running its setup at
// once and its work once the clock starts (start).
func startWorkers(ctx context.Context, opts Options, w Worker, stop *Stop, recs []*metrics.Recorder) *workers {
	ws := &workers{errs: make([]error, opts.Workers), begin: make(chan struct{})}
	for i := range recs {
		ws.wg.Add(1)
		ws.setUps.Add(1)
		go func() {
			defer ws.wg.Done()
			if opts.Setup != nil {
				ws.errs[i] = opts.Setup(i)
			}
			ws.setUps.Done()
			<-ws.begin
			if !ws.aborted {
				ws.errs[i] = w(ctx, i, ws.clock, stop, recs[i])
			}
		}()
	}
	return ws
}

// setUp waits for every worker's setup; one that failed ends them all.
func (ws *workers) setUp() error {
	ws.setUps.Wait()
	if err := errors.Join(ws.errs...); err != nil {
		ws.aborted = true
		close(ws.begin)
		ws.wg.Wait()
		return fmt.Errorf("setting up workers: %w", err)
	}
	return nil
}

// start lets the workers work on clock; the channel closes when every one
// has returned.
func (ws *workers) start(clock metrics.Clock) <-chan struct{} {
	ws.clock = clock
	close(ws.begin)
	done := make(chan struct{})
	go func() { ws.wg.Wait(); close(done) }()
	return done
}

// chargeCPU charges the run with the CPU the process used from c0 to c1,
// and the time its threads waited for a CPU: the generator's own wait, a
// starved client, not a slow target. Threads that ended with their
// workers said theirs; any other that ended took its own with it (never
// below 0).
func chargeCPU(res *metrics.Result, c0, c1 cpuTimes, stop *Stop) {
	res.CPUUserS = c1.user - c0.user
	res.CPUSysS = c1.sys - c0.sys
	if c0.waitOK && c1.waitOK {
		wait := c1.wait + float64(stop.endedWaitNs.Load())/1e9 - c0.wait
		res.Extra = metrics.WithExtra(res.Extra, map[string]float64{"gen_cpu_wait_s": max(wait, 0)})
	}
}

// waitGrace waits for the workers to finish what they have in flight
// (done), for at most grace; past it, it cuts their operations (the hard
// stop) and says they did not finish.
func waitGrace(done <-chan struct{}, grace time.Duration, hardStop func()) bool {
	select {
	case <-done:
		return true
	case <-time.After(grace):
		hardStop()
		return false
	}
}

// cutWait is how long workers have to return once the hard stop cut
// their operations.
const cutWait = 2 * time.Second

// rusageAt returns the process's CPU use at d from now, once that has
// come (at once when d is 0): the CPU a run is charged starts with its
// measured window.
func rusageAt(d time.Duration) func() cpuTimes {
	if d <= 0 {
		c := rusage()
		return func() cpuTimes { return c }
	}
	var once sync.Once
	var c cpuTimes
	t := time.AfterFunc(d, func() { once.Do(func() { c = rusage() }) })
	return func() cpuTimes {
		t.Stop()
		once.Do(func() { c = rusage() }) // the run ended before the ramp did
		return c
	}
}

// waitSoftStop returns when the runtime has elapsed, all workers are done,
// or ctx is cancelled, setting stop in the first and last case. Meanwhile
// it hands finished seconds to sink, if there is one.
func waitSoftStop(ctx context.Context, opts Options, clock metrics.Clock, series *metrics.Series, done <-chan struct{}, stop *Stop,
	sink func([]metrics.Second), drainEvery time.Duration, steady *steadyJudge) (interrupted, graceExceeded bool) {
	var deadline <-chan time.Time
	if opts.Runtime > 0 {
		t := time.NewTimer(opts.Ramp + opts.Runtime)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	lastDrain := time.Now()
	var fed int64 // the first second the steady-state judge has not seen
	judge := func(secs []metrics.Second) bool {
		for _, sec := range secs {
			if sec.T >= fed && sec.T >= 0 {
				fed = sec.T + 1
				if steady.add(sec) {
					return true
				}
			}
		}
		return false
	}
	for {
		var drained []metrics.Second
		if sink != nil && time.Since(lastDrain) >= drainEvery {
			if drained = series.Drain(); len(drained) > 0 {
				sink(drained)
			}
			lastDrain = time.Now()
		}
		if steady != nil && (judge(drained) || judge(series.Final(fed))) {
			stop.stop()
			return false, false
		}
		select {
		case <-done:
			return false, false
		case <-deadline:
			stop.stop()
			return false, false
		case <-ctx.Done():
			stop.stop()
			return true, false
		case <-tick.C:
			if opts.Progress != nil && clock.Now() >= 0 {
				ops, bytes := series.Totals()
				opts.Progress(time.Duration(clock.Now()), ops, bytes)
			}
		}
	}
}

// cpuTimes is the process's CPU time so far, and the time its threads
// waited for a CPU (waitOK: where the kernel counts it).
type cpuTimes struct {
	user, sys, wait float64
	waitOK          bool
}

func rusage() cpuTimes {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	c := cpuTimes{
		user: float64(ru.Utime.Sec) + float64(ru.Utime.Usec)/1e6,
		sys:  float64(ru.Stime.Sec) + float64(ru.Stime.Usec)/1e6,
	}
	c.wait, c.waitOK = cpuWait()
	return c
}

// TimingOverhead measures the cost in nanoseconds of what the hot path adds
// to one operation: two clock reads and one Record.
func TimingOverhead() float64 {
	const n = 20000
	series := metrics.NewSeries()
	rec := series.NewRecorder()
	clock := metrics.NewClock()
	t0 := clock.Now()
	for i := 0; i < n; i++ {
		s := clock.Now()
		e := clock.Now()
		rec.Record(metrics.Read, 4096, e, e-s+1000)
	}
	return float64(clock.Now()-t0) / n
}

// Yielder lets a worker that never parks — one locked to its thread,
// looping on system calls — pass through the scheduler now and then. The
// runtime's monitor treats a goroutine that has not been rescheduled for
// 10 ms as running too long: it signals its thread, takes its P away in the
// middle of a system call, and after each such retake polls every 20 µs
// instead of backing off towards 10 ms; on a VM each of those wake-ups costs
// tens of µs of CPU. A voluntary yield every few milliseconds avoids all
// of it.
type Yielder struct{ next int64 }

// yieldEvery is how often a worker yields.
const yieldEvery = int64(5 * time.Millisecond)

// Tick yields when the last yield (or the first tick) is yieldEvery ago;
// nowNs is a metrics.Clock reading.
func (y *Yielder) Tick(nowNs int64) {
	if nowNs < y.next {
		return
	}
	if y.next != 0 {
		runtime.Gosched()
	}
	y.next = nowNs + yieldEvery
}
