package fs

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/metrics"
)

// Together is jobs that run at the same time, as fio runs a job file's
// sections that do not wait for the ones before them (no stonewall): a
// reader beside a writer, tenants side by side. A run starts every job at
// once and ends when the last has; its operations, histograms and seconds
// are every job's (merged exactly, as the segments of a load are), and
// each job's own figures are kept as job.N.* (N from 1 in the file's
// order) — fio's group_reporting and its per-job lines in one.
type Together struct {
	jobs  []*FS
	names []string
}

// NewTogether runs jobs, named by names, at the same time.
func NewTogether(jobs []*FS, names []string) *Together {
	return &Together{jobs: jobs, names: names}
}

// Kind implements workload.Workload.
func (t *Together) Kind() string { return "fs" }

// Params implements workload.Workload: what every job has alike, and the
// jobs' names.
func (t *Together) Params() map[string]string {
	p := t.jobs[0].Params()
	for _, j := range t.jobs[1:] {
		q := j.Params()
		maps.DeleteFunc(p, func(k, v string) bool { return q[k] != v })
	}
	p["jobs"] = strings.Join(t.names, ",")
	return p
}

// Runtime is the longest job's (its start delay and ramp included).
func (t *Together) Runtime() time.Duration {
	var d time.Duration
	for _, j := range t.jobs {
		d = max(d, j.opts.StartDelay+j.opts.Runtime+j.opts.RampTime)
	}
	return d
}

// Prepare implements workload.Workload: each job's files, in turn.
func (t *Together) Prepare(ctx context.Context) error {
	for _, j := range t.jobs {
		if err := j.Prepare(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Run implements workload.Workload.
func (t *Together) Run(ctx context.Context, progress func(ops, bytes int64)) (*metrics.Result, error) {
	results, errs := make([]*metrics.Result, len(t.jobs)), make([]error, len(t.jobs))
	var mu sync.Mutex
	sums := make([][2]int64, len(t.jobs))
	var self0 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &self0)
	var wg sync.WaitGroup
	for i, j := range t.jobs {
		wg.Go(func() {
			results[i], errs[i] = j.Run(ctx, func(ops, bytes int64) {
				if progress == nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				sums[i] = [2]int64{ops, bytes}
				var o, b int64
				for _, s := range sums {
					o, b = o+s[0], b+s[1]
				}
				progress(o, b)
			})
		})
	}
	wg.Wait()
	var done []*metrics.Result
	for _, r := range results {
		if r != nil {
			done = append(done, r)
		}
	}
	if len(done) < len(t.jobs) {
		return nil, errors.Join(errs...)
	}
	res := metrics.MergeTogether(done)
	t.ownCPU(res, done, self0)
	for i, r := range done {
		addJobResult(res.Extra, i+1, r)
	}
	return res, errors.Join(errs...)
}

// ownCPU makes the run's CPU right when a job ran as threads of this
// process (thread=1): such a job measures the whole process, so the jobs'
// figures would count it once a job. It is then this process's own over
// the run, and the job processes' of the other jobs.
func (t *Together) ownCPU(res *metrics.Result, done []*metrics.Result, self0 unix.Rusage) {
	var user, sys float64
	threads := false
	for i, j := range t.jobs {
		if j.asProcesses() {
			user, sys = user+done[i].CPUUserS, sys+done[i].CPUSysS
		} else {
			threads = true
		}
	}
	if !threads {
		return
	}
	var self1 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &self1)
	res.CPUUserS = user + time.Duration(self1.Utime.Nano()-self0.Utime.Nano()).Seconds()
	res.CPUSysS = sys + time.Duration(self1.Stime.Nano()-self0.Stime.Nano()).Seconds()
}

// Close implements workload.Workload.
func (t *Together) Close() error {
	var errs []error
	for _, j := range t.jobs {
		errs = append(errs, j.Close())
	}
	return errors.Join(errs...)
}

// addJobResult adds one job's run as job.N.*: its reads and writes,
// over its own run.
func addJobResult(extra map[string]float64, n int, r *metrics.Result) {
	lat := metrics.NewHistogram()
	for _, d := range []metrics.Op{metrics.Read, metrics.Write} {
		if h := r.ByOp[d].Lat; h != nil {
			lat.Merge(h)
		}
	}
	addJob(extra, n, r.ByOp[metrics.Read].Ops+r.ByOp[metrics.Write].Ops, r.Bytes(), r.Errors, r.Duration.Seconds(), lat)
}
