// Package fs is the file and block I/O workload, driven like fio: jobs with
// an access pattern, block size, queue depth and file region, issuing I/O
// through an engine (psync, io_uring, or fio itself as the reference).
//
// Prepare checks the target and lays out files; each Run opens nothing new,
// drops the page cache of the files when fio would (invalidate=1), and runs
// the jobs through the driver, which records every operation.
package fs

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/workload"
)

// FS is one configured fs job set.
type FS struct {
	opts  Options
	jobs  []*job
	notes []metrics.Note
}

// job is the state one fio job shares among its workers. Jobs run on
// different cores, so each is padded to its own cache lines: without it the
// counters of neighbouring jobs would bounce a shared line on every op.
type job struct {
	_         [64]byte
	fd        int
	path      string
	regionBlk int64 // blocks in the file region
	limited   bool  // false when time-based: no budget to count
	remaining atomic.Int64
	cursor    atomic.Int64 // next sequential block
	writes    atomic.Int64 // for fsync every N writes
	_         [64]byte
}

// New validates opts and returns the workload.
func New(opts Options) (*FS, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	f := &FS{}
	if e := FioEngines[opts.Engine]; e != "" && e != opts.Engine {
		f.notes = append(f.notes, metrics.Note{Code: "fio-engine", Message: fmt.Sprintf(
			"ioengine=%s runs as iolab's %s", opts.Engine, e)})
		opts.Engine = e
	}
	opts.resolveEngine()
	if opts.Engine == EnginePsync && opts.IODepth > 1 {
		// What fio does: a synchronous engine has one operation in
		// flight, whatever iodepth says.
		f.notes = append(f.notes, metrics.Note{Code: "iodepth-capped", Message: fmt.Sprintf(
			"--ioengine psync is synchronous, so --iodepth %d is capped at 1, as fio does; --ioengine psync-pool runs %d synchronous issuers per job", opts.IODepth, opts.IODepth)})
		opts.IODepth, opts.IODepthBatch = 1, 1
	}
	f.opts = opts
	return f, nil
}

// Kind implements workload.Workload.
func (f *FS) Kind() string { return "fs" }

// Params implements workload.Workload.
func (f *FS) Params() map[string]string { return f.opts.Params() }

// Options returns the options after Prepare resolved defaults (such as the
// size of an existing file).
func (f *FS) Options() Options { return f.opts }

// Prepare checks the target, resolves the size, lays out files that are too
// small and opens them.
func (f *FS) Prepare(ctx context.Context) error {
	o := &f.opts
	if o.Directory != "" && o.Engine != EngineNull {
		if err := CheckDirectory(o.Directory); err != nil {
			return &workload.InputError{Err: err}
		}
	}
	if err := f.resolveSize(); err != nil {
		return &workload.InputError{Err: err}
	}
	switch o.Engine {
	case EngineFio:
		return f.prepareFio(ctx)
	case EngineNull:
		for range o.NumJobs {
			f.jobs = append(f.jobs, &job{fd: -1, regionBlk: o.Size / o.BlockSize})
		}
		return nil
	}
	write := o.readShare() < 100
	for j := 0; j < o.NumJobs; j++ {
		path := o.filePath(j)
		if j == 0 || o.Directory != "" {
			if err := f.ensureLaidOut(ctx, path); err != nil {
				return err
			}
		}
		flags := unix.O_RDONLY
		if write {
			flags = unix.O_RDWR
		}
		fd, fellBack, err := OpenFile(path, flags, o.Direct)
		if err != nil {
			f.Close()
			return err
		}
		if fellBack && len(f.notes) == 0 {
			f.notes = append(f.notes, metrics.Note{Code: "o-direct-fallback",
				Message: fmt.Sprintf("%s refuses O_DIRECT (tmpfs does); --direct ran as buffered I/O, so the page cache is in every number", path)})
		}
		f.jobs = append(f.jobs, &job{fd: fd, path: path, regionBlk: o.Size / o.BlockSize})
	}
	return nil
}

func (f *FS) resolveSize() error {
	o := &f.opts
	if o.Size > 0 {
		return nil
	}
	n, _, err := existingSize(o.filePath(0))
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", o.filePath(0), err)
	case n <= 0:
		return fmt.Errorf("--size is required: %s does not exist yet (or is empty)", o.filePath(0))
	case n < o.BlockSize:
		return fmt.Errorf("--size: %s holds %d bytes, less than one block (--bs %d)", o.filePath(0), n, o.BlockSize)
	}
	o.Size = n
	return nil
}

func (f *FS) ensureLaidOut(ctx context.Context, path string) error {
	n, device, err := existingSize(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if device {
		if n < f.opts.Size {
			return fmt.Errorf("--size %d: larger than the device %s (%d bytes)", f.opts.Size, path, n)
		}
		return nil
	}
	if n >= f.opts.Size {
		return nil
	}
	return layOut(ctx, path, f.opts.Size, f.opts.Data)
}

// Run implements workload.Workload.
func (f *FS) Run(ctx context.Context, progress func(ops, bytes int64)) (*metrics.Result, error) {
	if f.opts.Engine == EngineFio {
		return f.runFio(ctx)
	}
	o := &f.opts
	budget := o.IOSize
	if budget == 0 && o.Runtime == 0 {
		budget = o.Size
	}
	for _, j := range f.jobs {
		j.limited = budget > 0
		j.remaining.Store(budget / o.BlockSize)
		j.cursor.Store(0)
		j.writes.Store(0)
		if o.Invalidate && !o.Direct && j.fd >= 0 {
			_ = unix.Fadvise(j.fd, 0, 0, unix.FADV_DONTNEED)
		}
	}
	dopts := driver.Options{Workers: len(f.jobs), Runtime: o.Runtime, Ramp: o.RampTime, ProcPerWorker: true}
	worker := f.uringWorker
	switch {
	case synchronous(o.Engine):
		dopts.Workers = len(f.jobs) * o.IODepth
		worker = f.psyncWorker
	case o.Engine == EngineNull:
		worker = f.nullWorker
	}
	if progress != nil {
		dopts.Progress = func(_ time.Duration, ops, bytes int64) { progress(ops, bytes) }
	}
	res, err := driver.Run(ctx, dopts, worker)
	if res != nil {
		res.Notes = append(res.Notes, f.notes...)
	}
	return res, err
}

// Close implements workload.Workload.
func (f *FS) Close() error {
	for _, j := range f.jobs {
		if j.fd >= 0 {
			_ = unix.Close(j.fd)
		}
	}
	f.jobs = nil
	return nil
}

// take reserves one block of the job's budget.
func (j *job) take() bool { return !j.limited || j.remaining.Add(-1) >= 0 }

// nextSeq returns the next sequential block, wrapping at the region's end.
func (j *job) nextSeq() int64 { return (j.cursor.Add(1) - 1) % j.regionBlk }

// syncEvery is the number of writes between two syncs (0: never).
func (o *Options) syncEvery() int {
	if o.Fsync > 0 {
		return o.Fsync
	}
	return o.Fdatasync
}

// syncDue counts a write and reports whether an fsync is due after it.
func (j *job) syncDue(every int) bool {
	return every > 0 && j.writes.Add(1)%int64(every) == 0
}
