// Package workload defines what every kind of load iolab drives has in
// common. Each workload (fs now; frames, s3, http and cmd later) lives in a
// package of its own below this one and satisfies Workload.
package workload

import (
	"context"
	"math"
	"time"

	"github.com/iolab/iolab/internal/metrics"
)

// Workload is one configured load: one cell of an experiment.
type Workload interface {
	// Kind names the workload package ("fs").
	Kind() string
	// Params are the cell's parameters as stored and shown, in fio's
	// vocabulary where there is one (rw, bs, iodepth ...).
	Params() map[string]string
	// Prepare creates what the runs need (files laid out, objects
	// uploaded). It is not timed and runs once before the first run.
	Prepare(ctx context.Context) error
	// Run performs one measured run. When ctx is cancelled it stops early
	// and returns what it measured together with ctx's error.
	Run(ctx context.Context, progress func(ops, bytes int64)) (*metrics.Result, error)
	// Close releases what Prepare acquired.
	Close() error
}

// InputError is a problem with what the user asked for that shows only when
// the target is inspected (a missing directory, a read-only filesystem, not
// enough free space): bad input, not a failed run.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Pacer is the Options of a kind whose load can run on a schedule of
// operations per second as well as flat out: a plan's curve: runs it flat
// out, then at shares of the rate it reached (vdbench's curve=).
type Pacer interface {
	// PaceKey is the option that sets the schedule (rate_iops, rate): a
	// curve sets it, so a plan of a curve must not.
	PaceKey() string
	// Pace sets the options to run at share of the rate max — a run of the
	// same options, flat out — reached, in each direction it measured.
	Pace(max *metrics.Result, share float64)
	// FlatOut sets the options to run as fast as they go, a curve's
	// maximum: how paced starts are spaced (a Poisson process) is the
	// paced loads' alone.
	FlatOut()
	// PacedLater says the options are a paced load of a curve or a
	// search, whose rate its calibration sets (Pace): until then they
	// have none, and how they space their starts is kept for it.
	PacedLater()
}

// Lengthener is the Options of a Pacer whose paced runs can be made to
// hold at least a number of operations — a run at a low rate that holds
// too few for the percentile an objective judges (plan.SLO.MinOps) —
// by a longer runtime (or a larger count). AtLeast says whether it
// lengthened the run.
type Lengthener interface {
	AtLeast(ops int64) bool
}

// MaxLengthened bounds a Lengthener: a run is made at most this many
// times as long as asked (a p99 at 5 requests/s would need 200 s runs);
// the report names the loads whose runs were still too short.
const MaxLengthened = 10

// Lengthened is the runtime a paced run of runtime at rate operations a
// second needs to hold ops operations, at most MaxLengthened times as
// long; false when it holds them already (or has no runtime or rate).
func Lengthened(runtime time.Duration, rate float64, ops int64) (time.Duration, bool) {
	if runtime <= 0 || rate <= 0 || runtime.Seconds()*rate >= float64(ops) {
		return runtime, false
	}
	return min(MaxLengthened*runtime, time.Duration(math.Ceil(float64(ops)/rate*1e3))*time.Millisecond), true
}

// Gater is a workload with a pass/fail criterion the user asked to enforce
// (frames' --fail-on-late). A run that misses it is a good measurement and
// is stored as one; the experiment goes on, and ends with an error that
// names the runs that failed.
type Gater interface {
	// Gate returns why a run's result fails the criterion, or nil.
	Gate(res *metrics.Result) error
}

// Object is something a run left in the target, with what it should hold:
// the content its Seed generates, Size bytes long.
type Object struct {
	Key  string
	Size int64
	Seed uint64
}

// Manifester is a workload that leaves objects behind (s3 with --keep). After
// each run it hands over what the run wrote, so the objects can be checked
// later (iolab s3 verify), for instance after a server restart.
type Manifester interface {
	// Manifest returns the seed of the content generator and the objects
	// written by the last run, and forgets them.
	Manifest() (contentSeed uint64, objects []Object)
}

// Outputter is a workload whose run hands values on to the next step: a
// plan's setup step writes them, one per line, to the file its measured
// workload reads as {{ids}} (the ids uploads returned, lines a command
// printed).
type Outputter interface {
	// Outputs returns what the last run produced, and forgets it.
	Outputs() []string
}

// RunInfo is where a run stands in its experiment, for templates a
// workload fills per run ({{run}}, {{round}} in a command).
type RunInfo struct {
	// Run counts the experiment's scheduled runs from 0, warm-up first;
	// Round its rounds the same way.
	Run, Round int
}

type runInfoKey struct{}

// WithRunInfo returns a context that carries ri.
func WithRunInfo(ctx context.Context, ri RunInfo) context.Context {
	return context.WithValue(ctx, runInfoKey{}, ri)
}

// RunInfoFrom returns the RunInfo ctx carries, if any.
func RunInfoFrom(ctx context.Context) (RunInfo, bool) {
	ri, ok := ctx.Value(runInfoKey{}).(RunInfo)
	return ri, ok
}

// ArrivalSeed is the seed of a run's Poisson arrivals (driver.Poisson)
// for one stream of them (a segment's, a job's): every variant's run of a
// round gets the same arrivals, so their comparison pairs on them, and
// each round others, so the rounds sample the process rather than repeat
// one draw of it.
func ArrivalSeed(ctx context.Context, stream int) uint64 {
	ri, _ := RunInfoFrom(ctx)
	return uint64(ri.Round)<<32 | uint64(uint32(stream))
}
