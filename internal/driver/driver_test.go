package driver

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
)

// busy records one operation per millisecond until stopped.
func busy(_ context.Context, _ int, clock metrics.Clock, stop *Stop, rec *metrics.Recorder) error {
	for !stop.Stopped() {
		start := clock.Now()
		time.Sleep(time.Millisecond)
		end := clock.Now()
		rec.Record(metrics.Read, 4096, end, end-start)
	}
	return nil
}

func TestRuntimeStopsWorkersAndMergesThem(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	res, err := Run(context.Background(), Options{Workers: 3, Runtime: 1200 * time.Millisecond,
		Progress: func(time.Duration, int64, int64) { calls.Add(1) }}, busy)
	if err != nil {
		t.Fatal(err)
	}
	r := res.ByOp[metrics.Read]
	if r.Ops == 0 || r.Lat.TotalCount() != r.Ops || r.Bytes != 4096*r.Ops {
		t.Fatalf("read stats %+v", r)
	}
	var seriesOps int64
	for _, s := range res.Series {
		seriesOps += s.Ops
	}
	if seriesOps != r.Ops || len(res.Series) < 2 {
		t.Fatalf("series holds %d ops in %d seconds; the run has %d", seriesOps, len(res.Series), r.Ops)
	}
	if calls.Load() == 0 {
		t.Fatal("progress never called")
	}
	if res.TimingOverheadNs <= 0 {
		t.Fatal("timing overhead not measured")
	}
}

func TestCancelReturnsPartialResult(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	res, err := Run(ctx, Options{Workers: 2, Runtime: time.Hour}, busy)
	if !errors.Is(err, context.Canceled) || res == nil || res.ByOp[metrics.Read].Ops == 0 {
		t.Fatalf("err %v, result %+v", err, res)
	}
}

func TestGraceExceeded(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	stuck := func(ctx context.Context, _ int, _ metrics.Clock, _ *Stop, _ *metrics.Recorder) error {
		select { // ignores the soft stop, like a worker blocked in a system call
		case <-release:
		case <-ctx.Done():
			<-release
		}
		return nil
	}
	_, err := Run(context.Background(), Options{Workers: 1, Runtime: 10 * time.Millisecond, Grace: 50 * time.Millisecond}, stuck)
	if !errors.Is(err, ErrGraceExceeded) {
		t.Fatalf("err %v, want grace exceeded", err)
	}
}

// A worker whose operation hangs until the hard stop cuts it (a network
// request) returns then: the run keeps its figures, the cut operation
// counted as an error, where it used to end with no figures and no error.
func TestHungOperationCutAtTheHardStopKeepsTheFigures(t *testing.T) {
	t.Parallel()
	hung := func(ctx context.Context, w int, clock metrics.Clock, stop *Stop, rec *metrics.Recorder) error {
		for !stop.Stopped() {
			if w == 1 {
				<-ctx.Done() // a request the server never answers
				rec.OpError(metrics.Get, "cut", errors.New("get: cut at the hard stop"))
				return nil
			}
			s := clock.Now()
			time.Sleep(time.Millisecond)
			rec.Record(metrics.Read, 4096, clock.Now(), clock.Now()-s)
		}
		return nil
	}
	res, err := Run(context.Background(), Options{Workers: 2, Runtime: 50 * time.Millisecond, Grace: 50 * time.Millisecond}, hung)
	if !errors.Is(err, ErrGraceExceeded) || res == nil {
		t.Fatalf("err %v, result %v: want the figures with grace exceeded", err, res)
	}
	if res.ByOp[metrics.Read].Ops == 0 || res.ByOp[metrics.Get].Errors != 1 || res.Errors != 1 {
		t.Fatalf("reads %d, get errors %d, errors %d: want the reads and the one cut GET", res.ByOp[metrics.Read].Ops,
			res.ByOp[metrics.Get].Errors, res.Errors)
	}
}

func TestWorkerErrorIsReturned(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	failing := func(_ context.Context, w int, _ metrics.Clock, _ *Stop, rec *metrics.Recorder) error {
		if w == 1 {
			rec.Error(boom)
			return boom
		}
		return nil
	}
	res, err := Run(context.Background(), Options{Workers: 2}, failing)
	if !errors.Is(err, boom) || res.Errors != 1 || res.FirstError != "boom" {
		t.Fatalf("err %v, errors %d %q", err, res.Errors, res.FirstError)
	}
}

// Tick yields once per period, not on every call: a worker calling it
// after every operation passes through the scheduler every yieldEvery.
func TestYielderPeriod(t *testing.T) {
	var y Yielder
	y.Tick(1000) // the first tick only starts the period
	if y.next != 1000+yieldEvery {
		t.Fatalf("next yield at %d, want %d", y.next, 1000+yieldEvery)
	}
	y.Tick(1000 + yieldEvery - 1)
	if y.next != 1000+yieldEvery {
		t.Fatal("yielded before the period ended")
	}
	y.Tick(1000 + yieldEvery + 7)
	if y.next != 1000+2*yieldEvery+7 {
		t.Fatalf("after a yield, next at %d, want %d", y.next, 1000+2*yieldEvery+7)
	}
}

// Setup runs in every worker before the clock starts: the run's clock
// starts after the last setup ended, and a failed setup ends the run
// before any worker runs.
func TestSetupIsOutsideTheClock(t *testing.T) {
	t.Parallel()
	var setupEnds [4]time.Time
	var ran atomic.Int64
	opts := Options{Workers: 4, Setup: func(worker int) error {
		time.Sleep(time.Duration(worker*20) * time.Millisecond) // the last is slowest
		setupEnds[worker] = time.Now()
		return nil
	}}
	var starts [4]time.Time
	res, err := Run(context.Background(), opts, func(_ context.Context, i int, clock metrics.Clock, _ *Stop, rec *metrics.Recorder) error {
		ran.Add(1)
		starts[i] = clock.Start()
		rec.Record(metrics.Read, 1, clock.Now(), 1)
		return nil
	})
	if err != nil || ran.Load() != 4 {
		t.Fatalf("%v, %d workers ran", err, ran.Load())
	}
	for i, end := range setupEnds {
		if res.Start.Before(end) || !starts[i].Equal(res.Start) {
			t.Fatalf("the clock started at %v, before worker %d's setup ended at %v", res.Start, i, end)
		}
	}

	ran.Store(0)
	opts.Setup = func(worker int) error {
		if worker == 2 {
			return errors.New("no buffer")
		}
		return nil
	}
	res, err = Run(context.Background(), opts, func(context.Context, int, metrics.Clock, *Stop, *metrics.Recorder) error {
		ran.Add(1)
		return nil
	})
	if err == nil || res != nil || ran.Load() != 0 {
		t.Fatalf("failed setup: %v, %v, %d workers ran", res, err, ran.Load())
	}
}

// With a ramp, workers run before the clock's zero and nothing that
// ended then is measured: the result covers the runtime after it, its
// series starting at second 0.
func TestRampIsRunNotMeasured(t *testing.T) {
	t.Parallel()
	var first atomic.Int64
	first.Store(math.MaxInt64)
	opts := Options{Workers: 1, Runtime: 400 * time.Millisecond, Ramp: 600 * time.Millisecond}
	res, err := Run(context.Background(), opts, func(_ context.Context, _ int, clock metrics.Clock, stop *Stop, rec *metrics.Recorder) error {
		first.CompareAndSwap(math.MaxInt64, clock.Now())
		for !stop.Stopped() {
			start := clock.Now()
			time.Sleep(10 * time.Millisecond)
			end := clock.Now()
			rec.Record(metrics.Read, 1, end, end-start)
			rec.RecordTTFB(metrics.Read, end-start)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if f := first.Load(); f > -500*int64(time.Millisecond) {
		t.Fatalf("the worker began at %v on the run's clock, want about -600ms", time.Duration(f))
	}
	// A sleep of 10 ms takes at least 10 ms: at most 40 in 400 ms, and the
	// 60 of the ramp are not among them.
	ops := res.ByOp[metrics.Read].Ops
	if ops == 0 || ops > 41 || res.ByOp[metrics.Read].TTFB.TotalCount() != ops {
		t.Fatalf("%d operations measured (%d TTFBs), want at most 41, each with its TTFB", ops, res.ByOp[metrics.Read].TTFB.TotalCount())
	}
	if res.Duration < 400*time.Millisecond || res.Duration > 5*time.Second {
		t.Fatalf("duration %v, want the 400ms after the ramp", res.Duration)
	}
	if len(res.Series) == 0 || res.Series[0].T != 0 {
		t.Fatalf("series %+v, want it to begin at second 0", res.Series)
	}
	// A job that ends during the ramp measured nothing, and says so.
	_, err = Run(context.Background(), Options{Workers: 1, Ramp: time.Second}, func(_ context.Context, _ int, clock metrics.Clock, _ *Stop, rec *metrics.Recorder) error {
		rec.Record(metrics.Read, 1, clock.Now(), 1)
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "ramp") {
		t.Fatalf("a run that ended in its ramp: %v", err)
	}
}

// A paced run starts what its schedule has due within its runtime and
// nothing due at or after its end, however late the stop comes: 100
// starts a second for 300 ms are 30 (due at 0, 10, ... 290 ms), never the
// 31st due at 300 ms — which a stop on Go's timer, a millisecond late,
// would let start.
func TestPacedRunStartsNothingDueAfterItsEnd(t *testing.T) {
	t.Parallel()
	for range 3 {
		pace := NewPacer(100, Linear, 1)
		res, err := Run(context.Background(), Options{Workers: 4, Runtime: 300 * time.Millisecond},
			func(_ context.Context, _ int, clock metrics.Clock, stop *Stop, rec *metrics.Recorder) error {
				for !stop.Stopped() {
					due := pace.Due(clock, clock.Now())
					if !SleepUntil(clock, due, stop) {
						return nil
					}
					rec.Record(metrics.Read, 1, clock.Now(), 1)
				}
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if n := res.ByOp[metrics.Read].Ops; n < 1 || n > 30 {
			t.Fatalf("%d starts in 300 ms at 100 a second; want at most 30", n)
		}
	}
}

// The generator's wait for a CPU counts the threads that ended with their
// workers (locked for good: a private descriptor table) as well as those
// that live on: twice as many spinning workers as CPUs wait, between
// them, at least as long as the CPUs they had to share were busy.
func TestCPUWaitCountsThreadsThatEnded(t *testing.T) {
	if !CPUWaitCounted() {
		t.Skip("this kernel keeps no schedstat")
	}
	workers := 2 * runtime.NumCPU()
	const spin = 400 * time.Millisecond
	res, err := Run(context.Background(), Options{Workers: workers, ProcPerWorker: true},
		func(_ context.Context, _ int, clock metrics.Clock, stop *Stop, rec *metrics.Recorder) error {
			runtime.LockOSThread() // never unlocked: the thread ends with the worker
			defer stop.ThreadEnds()
			for end := time.Now().Add(spin); time.Now().Before(end); {
			}
			rec.Record(metrics.Read, 1, clock.Now(), 1)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	// Each of the workers spins 400 ms of wall time, runnable the whole
	// time on CPUs for half of them: between them they wait (workers-CPUs)
	// x 400 ms, more on a busy machine (without the ended threads' wait:
	// 0.38-0.51 s of the 0.8 here).
	least := 0.9 * float64(workers-runtime.NumCPU()) * spin.Seconds()
	if got := res.Extra["gen_cpu_wait_s"]; got < least {
		t.Errorf("gen_cpu_wait_s %.3f, want at least %.3f: the ended threads' wait was lost", got, least)
	}
}
