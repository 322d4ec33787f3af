package driver

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/iolab/iolab/internal/metrics"
)

// A thousand workers due within the same 2 ms all wake after their time,
// every one: at most maxPreciseSleepers hold a thread in the kernel's
// sleep, the others wait on Go's timers, and none is left counted. (Not
// parallel: the count is the package's, which other tests' sleeps share.)
func TestSleepUntilManySleepers(t *testing.T) {
	clock := metrics.NewClock()
	var stop Stop
	var wg sync.WaitGroup
	early := make(chan int64, 1000)
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			due := clock.Now() + int64(time.Millisecond) + int64(i%7)*int64(100*time.Microsecond)
			SleepUntil(clock, due, &stop)
			if now := clock.Now(); now < due {
				early <- due - now
			}
		}()
	}
	wg.Wait()
	close(early)
	for d := range early {
		t.Errorf("woke %v before its time", time.Duration(d))
	}
	if n := preciseSleepers.Load(); n != 0 {
		t.Errorf("%d sleepers still counted", n)
	}
}

// A Poisson pacer's gaps are exponential with the rate's mean: their mean
// is the interval, their standard deviation too, and 1-1/e of them are
// shorter than it; a linear pacer's are all the interval. The same seed
// gives the same arrivals.
func TestPoissonArrivals(t *testing.T) {
	const n, rate = 200000, 1000.0 // a gap of 1 ms on average
	gaps := func(p *Pacer) []float64 {
		out := make([]float64, 0, n)
		prev := p.Due(metrics.Clock{}, 0)
		for range n {
			due := p.Due(metrics.Clock{}, 0)
			out = append(out, float64(due-prev))
			prev = due
		}
		return out
	}
	g := gaps(NewPacer(rate, Poisson, 7))
	mean, sd := stat.MeanStdDev(g, nil)
	short := 0
	for _, x := range g {
		if x < 1e6 {
			short++
		}
	}
	if math.Abs(mean/1e6-1) > 0.01 || math.Abs(sd/1e6-1) > 0.02 || math.Abs(float64(short)/n-(1-1/math.E)) > 0.005 {
		t.Errorf("Poisson gaps: mean %.4g ns, sd %.4g ns, %.4f shorter than the mean; want 1e6, 1e6, %.4f", mean, sd, float64(short)/n, 1-1/math.E)
	}
	if again := gaps(NewPacer(rate, Poisson, 7)); !slices.Equal(g, again) {
		t.Error("the same seed gave other arrivals")
	}
	for _, x := range gaps(NewPacer(rate, Linear, 7))[:1000] {
		if x != 1e6 {
			t.Fatalf("a linear gap of %v ns, want 1e6", x)
		}
	}
	if _, err := ParseProcess("uniform"); err == nil || err.Error() != "want linear or poisson" {
		t.Errorf("an unknown process: %v", err)
	}
}

// Workers sharing a Poisson pacer each get a start of their own, and Ahead
// says when the next one is not due yet.
func TestPoissonPacerShared(t *testing.T) {
	p := NewPacer(1e6, Poisson, 1)
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				d := p.Due(metrics.Clock{}, 0)
				mu.Lock()
				seen[d] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) < 7990 || p.Issued() != 8000 {
		t.Errorf("%d distinct starts of %d issued, want 8000", len(seen), p.Issued())
	}
	if !p.Ahead(0) || p.Ahead(int64(10*time.Millisecond)) {
		t.Error("Ahead: the next start is about 8 ms after the first")
	}
}

// A worker waiting for a start an hour away returns at the stop, however
// it waits — its start due within the runtime (or with none), or past its
// end: the run ends with its last operation, not an hour later nor when
// an idle worker next looks.
func TestSleepUntilReturnsAtTheStop(t *testing.T) {
	for _, end := range []time.Duration{0, 2 * time.Hour, time.Minute} {
		clock := metrics.NewClock()
		stop := Stop{end: int64(end)}
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				SleepUntil(clock, clock.Now()+int64(time.Hour)+int64(i), &stop)
			}()
		}
		time.Sleep(10 * time.Millisecond) // the sleepers are asleep, or about to be
		stop.stop()
		stop.stop() // a second stop is no panic
		returned := make(chan struct{})
		go func() { wg.Wait(); close(returned) }()
		select {
		case <-returned:
		case <-time.After(time.Minute):
			t.Fatalf("runtime %v: the sleepers still wait a minute after the stop", end)
		}
	}
}

// A reserve's workers wait until a late start wakes one (it joins the
// run), and return when the run ends, at its stop or once its budget is
// spent — without waking to look meanwhile.
func TestReserveWaitsForAWakeTheStopOrTheBudget(t *testing.T) {
	for _, end := range []string{"stop", "spent"} {
		r := NewReserve(2, 6)
		var stop Stop
		joined := make(chan bool, 4)
		for range 4 {
			go func() { joined <- r.Wait(&stop, metrics.NewSeries().NewRecorder()) }()
		}
		r.wake <- 0 // as a late start does
		if !<-joined {
			t.Fatalf("%s: a woken worker did not join", end)
		}
		if end == "stop" {
			stop.stop()
		} else {
			r.Spent()
			r.Spent() // said again: nothing
		}
		for range 3 {
			select {
			case j := <-joined:
				if j {
					t.Fatalf("%s: a worker joined after the run ended", end)
				}
			case <-time.After(time.Minute):
				t.Fatalf("%s: the reserve still waits a minute after the run ended", end)
			}
		}
		if p := r.Peak(); p != 3 {
			t.Errorf("%s: peak %d workers, want the 2 it started with and the one woken", end, p)
		}
	}
	var none *Reserve
	none.Spent() // a run with no reserve
}

// A paced worker that wakes late by a known amount — it sleeps 3 ms more
// after its time, as a starved generator does — has every start counted
// late, each by at least that much, all of it its own delay; the
// lateness of a start is measured when it starts, not when it is asked
// for (it was asked for in time).
func TestLateWakeIsCountedLate(t *testing.T) {
	t.Parallel()
	const overshoot = 3 * time.Millisecond
	pace := NewPacer(100, Linear, 1)
	res, err := Run(context.Background(), Options{Workers: 1, Runtime: 500 * time.Millisecond},
		func(_ context.Context, _ int, clock metrics.Clock, stop *Stop, rec *metrics.Recorder) error {
			for !stop.Stopped() {
				asked := clock.Now()
				due := pace.Due(clock, asked)
				if !SleepUntil(clock, due, stop) {
					return nil
				}
				time.Sleep(overshoot) // woken late
				start := clock.Now()
				end := clock.Now()
				rec.Record(metrics.Read, 1, end, end-start)
				rec.RecordPaced(metrics.Read, due, asked)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	ops := float64(res.ByOp[metrics.Read].Ops)
	if ops < 5 || res.Extra["late_starts"] != ops || res.Extra["gen_late_starts"] != ops {
		t.Fatalf("%v operations: late %v, by iolab %v; want every one", ops, res.Extra["late_starts"], res.Extra["gen_late_starts"])
	}
	if lag := res.ByOp[metrics.Read].StartLag.ValueAtQuantile(0); lag < int64(overshoot)*999/1000 {
		t.Errorf("the least start lag %v, want at least the %v overshoot", time.Duration(lag), overshoot)
	}
	if own := res.Extra["gen_delay_s"]; own < ops*overshoot.Seconds() {
		t.Errorf("iolab's own delay %.4f s over %v operations, want at least %v each", own, ops, overshoot)
	}
}

// A paced generator slow to get going — its one worker asks for its first
// start 50 ms after the run began, as a starved or busy one does — has
// the starts due meanwhile counted late, each by as long as it waited:
// the schedule begins with the run, not with the first worker to ask.
func TestSlowStartIsCountedLate(t *testing.T) {
	t.Parallel()
	const slow, every = 50 * time.Millisecond, 10 * time.Millisecond
	pace := NewPacer(float64(time.Second/every), Linear, 1)
	res, err := Run(context.Background(), Options{Workers: 1, Runtime: 400 * time.Millisecond},
		func(_ context.Context, _ int, clock metrics.Clock, stop *Stop, rec *metrics.Recorder) error {
			time.Sleep(slow)
			for !stop.Stopped() {
				asked := clock.Now()
				due := pace.Due(clock, asked)
				if !SleepUntil(clock, due, stop) {
					return nil
				}
				rec.Record(metrics.Read, 1, clock.Now(), 1)
				rec.RecordPaced(metrics.Read, due, asked)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	// Due at 0, 10, ... 40 ms: five starts at least 10 ms late, the first
	// by the whole 50 ms — iolab's own delay, not a worker busy with the
	// target: nothing ran before.
	if late, own := res.Extra["late_starts"], res.Extra["gen_late_starts"]; late < float64(slow/every) || own < float64(slow/every) {
		t.Errorf("%v starts counted late, %v by iolab's own delay; want at least the %d due before the worker asked, each", late, own, slow/every)
	}
	if lag := res.ByOp[metrics.Read].StartLag.Max(); lag < int64(slow)*999/1000 {
		t.Errorf("the most a start was late: %v, want at least the %v the worker took to ask", time.Duration(lag), slow)
	}
}
