package driver

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/metrics"
)

// Pacer hands out the start times of operations at a fixed rate (fio's
// rate_iops, warp's --rate), from when the run began, to every worker
// that shares it. An operation that could not start on time (its workers were
// busy) starts at once, so the schedule catches up rather than drift;
// how late each actually started, whatever the cause, is what the
// worker's recorder counts (metrics.Recorder.RecordPaced), not the pacer.
type Pacer struct {
	interval float64 // ns
	origin   atomic.Int64
	started  atomic.Bool
	n        atomic.Int64
	// reserve, if set, is woken one worker at a time by late starts.
	reserve *Reserve
	// Poisson arrivals: the next start's offset from origin (ns), and
	// the gaps' source, under mu; next mirrors at for Ahead.
	poisson bool
	mu      sync.Mutex
	rng     *rand.Rand
	at      float64
	next    atomic.Int64
}

// Process is how a pacer spaces its starts at a rate: evenly (Linear:
// fio's rate_process=linear, wrk2's schedule, a D/·/c queue's arrivals),
// or as a Poisson process (fio's rate_process=poisson): gaps drawn from
// the exponential distribution of the same mean, the arrivals of many
// independent clients (an M/·/c queue's), bursts and lulls included.
type Process uint8

const (
	Linear Process = iota
	Poisson
)

// ProcessUsage is the help of a --rate-process flag.
const ProcessUsage = "how --rate spaces the starts: linear (evenly) or poisson (exponential gaps of the same mean: independent clients' arrivals, bursts included; the same for every variant in a round), as fio's rate_process"

// Processes are the names ParseProcess reads, as fio spells them.
var Processes = []string{"linear", "poisson"}

func (p Process) String() string { return Processes[p] }

// Set and Type make a Process a flag's value (pflag.Value).
func (p *Process) Set(s string) (err error) { *p, err = ParseProcess(s); return err }
func (p *Process) Type() string             { return "linear|poisson" }

// ParseProcess reads a Process by its name.
func ParseProcess(s string) (Process, error) {
	for i, name := range Processes {
		if s == name {
			return Process(i), nil
		}
	}
	return Linear, fmt.Errorf("want %s", strings.Join(Processes, " or "))
}

// Reserve is the workers of a paced run beyond those it starts with, up
// to a cap (k6's maxVUs): each waits, idle and with no connection, until
// an operation cannot start on time for want of a free worker — then one
// joins the others. A run that needs more than the cap keeps counting
// late starts.
type Reserve struct {
	most   int
	wake   chan int64    // when a start was asked for late (a clock reading)
	spent  chan struct{} // closed once a budget of operations is spent
	once   sync.Once
	active atomic.Int64
}

// NewReserve makes a reserve of most-start workers for a run that starts
// with start.
func NewReserve(start, most int) *Reserve {
	r := &Reserve{most: most, wake: make(chan int64, max(most-start, 0)), spent: make(chan struct{})}
	r.active.Store(int64(start))
	return r
}

// Wait holds a reserve worker until it is woken (true; its recorder is
// told it joined when it was called in: the lateness before was every
// worker busy), or until the run ends (false): at the stop, or once Spent
// is said. It waits on channels alone: a thousand idle workers take no
// CPU from those that run, and return the moment the run ends.
func (r *Reserve) Wait(stop *Stop, rec *metrics.Recorder) bool {
	select {
	case at := <-r.wake:
		rec.Joined(at)
		r.active.Add(1)
		return true
	case <-stop.done():
		return false
	case <-r.spent:
		return false
	}
}

// Spent says a run with a budget of operations has started its last:
// the workers still in reserve return. Nil or said again, it does
// nothing.
func (r *Reserve) Spent() {
	if r != nil {
		r.once.Do(func() { close(r.spent) })
	}
}

// Peak is how many workers were active at most.
func (r *Reserve) Peak() int64 { return r.active.Load() }

// Figures are a run's figures of its reserve: the most workers active
// (workers_peak) and the most it could grow to (workers_cap): a run
// that met its cap was held back by it, not by the target alone.
func (r *Reserve) Figures() map[string]float64 {
	return map[string]float64{"workers_peak": float64(r.Peak()), "workers_cap": float64(r.most)}
}

// Grow has late starts wake the reserve's workers.
func (p *Pacer) Grow(r *Reserve) { p.reserve = r }

// NewPacer paces at perSecond, its starts spaced as process says (a
// Poisson process's gaps drawn from a generator of that seed: the same
// seed, the same arrivals); nil (no pace) for 0.
func NewPacer(perSecond float64, process Process, seed uint64) *Pacer {
	if perSecond <= 0 {
		return nil
	}
	p := &Pacer{interval: 1e9 / perSecond}
	if process == Poisson {
		p.poisson, p.rng = true, rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	}
	return p
}

// Due reserves the next start time, a reading of the run's clock; now is
// one. The schedule begins when the clock did (metrics.Clock.Began: the
// workers let go), not at the first Due: a generator slow to get going —
// its threads waiting for a CPU, a worker's own set-up — has its first
// starts counted late, by as much as they were, and the run still starts
// everything due within its runtime.
func (p *Pacer) Due(clock metrics.Clock, now int64) int64 {
	if p.started.CompareAndSwap(false, true) {
		p.origin.Store(min(clock.Began(), now))
	}
	var due int64
	if p.poisson {
		p.mu.Lock()
		due = p.origin.Load() + int64(p.at)
		p.at += p.rng.ExpFloat64() * p.interval
		p.next.Store(int64(p.at))
		p.mu.Unlock()
		p.n.Add(1)
	} else {
		due = p.origin.Load() + int64(float64(p.n.Add(1)-1)*p.interval)
	}
	if p.reserve != nil && now-due > int64(metrics.LateAfter) {
		// Asked for late: no worker was free at its time.
		select {
		case p.reserve.wake <- now:
		default: // every reserve worker is at work, or on its way
		}
	}
	return due
}

// Ahead says the next operation is not due yet (false for no pacer).
func (p *Pacer) Ahead(now int64) bool {
	if p == nil || !p.started.Load() {
		return false
	}
	if p.poisson {
		return p.origin.Load()+p.next.Load() > now
	}
	return p.origin.Load()+int64(float64(p.n.Load())*p.interval) > now
}

// Issued is how many start times were handed out.
func (p *Pacer) Issued() int64 { return p.n.Load() }

// SleepUntil waits until the clock reads due (true), or until the stop
// (false: the operation waited for must not start); a start due at or
// after the runtime's end waits for the stop alone. Go's timers wake
// a sleeper up to a millisecond late (time.Sleep(50µs) takes 1.07 ms
// here), which a paced operation's response time would count as its own
// wait: the last 2 ms are slept by the kernel's nanosleep instead, which
// wakes within its timer slack (about 55 µs), the thread blocked in it.
func SleepUntil(clock metrics.Clock, due int64, stop *Stop) bool {
	if stop.Past(due) { // it waits for the stop, which comes first
		<-stop.done()
		return false
	}
	for !stop.Stopped() {
		d := due - clock.Now()
		switch {
		case d <= 0:
			return true
		case d > int64(preciseSleep):
			stop.sleep(time.Duration(d) - preciseSleep/2)
		case preciseSleepers.Add(1) > maxPreciseSleepers:
			// So many workers due within 2 ms (a rate in the hundreds of
			// thousands) would each hold a thread in nanosleep: the rest
			// wait on Go's timers.
			preciseSleepers.Add(-1)
			time.Sleep(time.Duration(d))
		default:
			ts := unix.NsecToTimespec(d)
			_ = unix.Nanosleep(&ts, nil) // EINTR: the loop sleeps the rest
			preciseSleepers.Add(-1)
		}
	}
	return false
}

// preciseSleep is how much of a wait the kernel sleeps, not Go's timers;
// at most maxPreciseSleepers threads at a time sleep there.
const (
	preciseSleep       = 2 * time.Millisecond
	maxPreciseSleepers = 256
)

var preciseSleepers atomic.Int64
