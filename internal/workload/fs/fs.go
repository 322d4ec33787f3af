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
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
)

// FS is one configured fs job set.
type FS struct {
	opts  Options
	whole int // numjobs of the whole load, when this is a segment of it
	jobs  []*job
	notes []metrics.Note
	// offsets draws random offsets by a non-uniform distribution; nil:
	// uniform, by the random map or afresh.
	offsets *sampler
	// runSeed seeds the run's random offsets and directions (RandSeed, or
	// a new one each run).
	runSeed uint64
}

// job is the state one fio job shares among its workers. Jobs run on
// different cores, so each is padded to its own cache lines: without it the
// counters of neighbouring jobs would bounce a shared line on every op.
type job struct {
	_         [64]byte
	index     int
	files     []*jobFile
	window    *window // files open and close as the job goes; nil: all stay open
	rr        atomic.Uint64
	limited   bool // false when time-based: no budget to count
	remaining atomic.Int64
	// bytesLeft is the budget in bytes of a job whose operations draw
	// their sizes (sized); remaining then bounds only its operations
	// (number_ios).
	bytesLeft atomic.Int64
	sized     bool
	writes    atomic.Int64     // for fsync every N writes
	pace      [2]*driver.Pacer // rate caps of reads and writes; nil: none
	_         [64]byte
}

// jobFile is one of a job's files (fio's nrfiles; one by default).
type jobFile struct {
	path      string
	fd        int   // -1 while closed
	base      int64 // where its region starts (fio's offset, offset_increment)
	regionBlk int64
	// wrapsAt: a sequential job with holes (rw=write:112k) wraps to its
	// region's start when its next offset from there is this far or
	// further (the file's size), and ends otherwise, as fio's does.
	wrapsAt int64
	device  bool         // a block device (trims are BLKDISCARD)
	mapped  sizedMap     // the random map with sizes drawn
	cursor  atomic.Int64 // next sequential block, or place in the random map
	perm    permutation  // the random map's order of the blocks
	runSeed uint64       // the run's seed (FS.runSeed), in the map's key
	seed    uint64       // of its verify blocks
	written []uint64     // a bit per block written in this run, when verifying
	// An openfiles window's bookkeeping (one worker per job).
	left     int64 // blocks of the pass not yet issued
	inflight int
	serving  bool
}

// New validates opts and returns the workload.
func New(opts Options) (*FS, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	f := &FS{}
	if by, ok := strings.CutPrefix(opts.Engine, EngineFio+":"); ok {
		opts.Engine, opts.FioEngine = EngineFio, by
	}
	if e := FioEngines[opts.Engine]; e != "" && e != opts.Engine {
		f.notes = append(f.notes, metrics.Note{Code: "fio-engine", Message: fmt.Sprintf(
			"ioengine=%s runs as iolab's %s", opts.Engine, e)})
		opts.Engine = e
	}
	f.whole = opts.NumJobs
	if seg := opts.Segment; seg.Split() {
		if opts.Engine == EngineFio {
			return nil, fmt.Errorf("--ioengine fio with --segment %s: fio numbers its jobs' files from 0 in every process; use iolab's engines", seg)
		}
		opts.NumJobs = seg.Share(f.whole)
		if err := seg.Starve("--numjobs", f.whole, "no job", true); err != nil {
			return nil, err
		}
		opts.jobOffset = seg.First(f.whole)
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

// Params implements workload.Workload: a segment's are the whole load's,
// with how many segments run it.
func (f *FS) Params() map[string]string {
	p := f.opts.Params()
	if f.opts.Segment.Split() {
		p["numjobs"], p["segments"] = fmt.Sprint(f.whole), fmt.Sprint(f.opts.Segment.N)
	}
	return p
}

// Options returns the options after Prepare resolved defaults (such as the
// size of an existing file).
func (f *FS) Options() Options { return f.opts }

// LoadOptions are Options with the whole load's jobs, of which a segment
// runs its share: what names the load, the same in every segment.
func (f *FS) LoadOptions() Options {
	o := f.opts
	if o.Segment.Split() {
		o.NumJobs = f.whole
	}
	return o
}

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
	if err := o.checkBitmapMemory(); err != nil {
		return &workload.InputError{Err: err}
	}
	if !o.Distribution.Uniform() && o.RW.random() {
		f.offsets = newSampler(o.Distribution, o.fileSize()/o.BlockSize, o.BlockSize, fileSeed(o.jobOffset, 0))
	}
	switch o.Engine {
	case EngineFio:
		return f.prepareFio(ctx)
	case EngineNull:
		for j := range o.NumJobs {
			f.jobs = append(f.jobs, &job{index: j, files: []*jobFile{{fd: -1, regionBlk: o.Size / o.BlockSize, perm: newPermutation(o.Size / o.BlockSize)}}})
		}
		return nil
	}
	for j := range o.NumJobs {
		jb := &job{index: j}
		f.jobs = append(f.jobs, jb)
		for k := range o.NrFiles {
			path := o.filePath(o.jobOffset+j, k)
			extent := o.jobBase(j) + o.fileSize() // its own file's, or where the last job's region ends in a shared one
			if o.Directory == "" {
				extent = o.jobBase(o.NumJobs-1) + o.fileSize()
			}
			if (j == 0 && k == 0) || o.Directory != "" {
				if err := f.ensureLaidOut(ctx, path, extent); err != nil {
					f.Close()
					return err
				}
			}
			size, device, err := existingSize(path)
			if err != nil {
				f.Close()
				return fmt.Errorf("%s: %w", path, err)
			}
			jb.files = append(jb.files, &jobFile{path: path, fd: -1, base: o.jobBase(j), regionBlk: o.fileSize() / o.BlockSize, seed: fileSeed(o.jobOffset+j, k),
				perm: newPermutation(o.fileSize() / o.BlockSize), wrapsAt: size, device: device})
		}
		if o.window() {
			jb.window = &window{size: o.OpenFiles, flags: o.openFlags(), direct: o.Direct}
			continue // its files open as it goes
		}
		for _, file := range jb.files {
			fellBack, err := file.open(o.openFlags(), o.Direct)
			if err != nil {
				f.Close()
				return err
			}
			if fellBack && len(f.notes) == 0 {
				f.notes = append(f.notes, metrics.Note{Code: "o-direct-fallback",
					Message: fmt.Sprintf("%s refuses O_DIRECT (tmpfs does); --direct ran as buffered I/O, so the page cache is in every number", file.path)})
			}
		}
	}
	return nil
}

// openFlags opens files read-only for a job that only reads.
func (o *Options) openFlags() int {
	if o.readShare() == 100 || o.Verify.Only {
		return unix.O_RDONLY
	}
	return unix.O_RDWR
}

func (file *jobFile) open(flags int, direct bool) (fellBack bool, err error) {
	if file.fd >= 0 {
		return false, nil
	}
	file.fd, fellBack, err = OpenFile(file.path, flags, direct)
	return fellBack, err
}

func (file *jobFile) close() {
	if file.fd >= 0 {
		_ = unix.Close(file.fd)
		file.fd = -1
	}
}

func (f *FS) resolveSize() error {
	o := &f.opts
	if o.Size > 0 {
		return nil
	}
	if o.FileSize > 0 {
		o.Size = o.FileSize * int64(o.NrFiles)
		return nil
	}
	first := o.filePath(o.jobOffset, 0)
	n, _, err := existingSize(first)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", first, err)
	case n <= 0:
		return fmt.Errorf("--size is required: %s does not exist yet (or is empty)", first)
	case n < o.BlockSize:
		return fmt.Errorf("--size: %s holds %d bytes, less than one block (--bs %d)", first, n, o.BlockSize)
	}
	o.Size = n * int64(o.NrFiles)
	return nil
}

// ensureLaidOut makes path hold size bytes: the file's regions, to where
// the last ends.
func (f *FS) ensureLaidOut(ctx context.Context, path string, size int64) error {
	n, device, err := existingSize(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if device {
		if n < size {
			what := fmt.Sprintf("--size %d", f.opts.fileSize())
			if size > f.opts.fileSize() {
				what += fmt.Sprintf(" from --offset %d (--offset_increment %d)", f.opts.Offset, f.opts.OffsetIncrement)
			}
			return fmt.Errorf("%s: ends at %d, past the end of the device %s (%d bytes)", what, size, path, n)
		}
		return nil
	}
	if n >= size {
		return nil
	}
	return layOut(ctx, path, size, f.opts.Data)
}

// Run implements workload.Workload.
func (f *FS) Run(ctx context.Context, progress func(ops, bytes int64)) (*metrics.Result, error) {
	if f.opts.Engine == EngineFio {
		return f.runFio(ctx)
	}
	if d := f.opts.StartDelay; d > 0 { // fio's startdelay: the job starts that much later (beside others: Together)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d):
		}
	}
	measure := f.measure
	if f.asProcesses() {
		measure = f.runJobs
	}
	res, t, err := measure(ctx, progress)
	if res == nil {
		return nil, err
	}
	o := &f.opts
	res.Notes = append(res.Notes, f.notes...)
	res.Notes = append(res.Notes, f.paceNotes(res, t.Issued)...)
	if o.Steady.Enabled() && !o.Thread {
		res.Notes = append(res.Notes, metrics.Note{Code: "jobs-as-threads", Message: "--steadystate ran the jobs as threads of one process, " +
			"not each as a process in a session of its own as fio does (the criterion judges the whole run's seconds as they come): " +
			"beside other work, where the kernel shares the CPU between sessions first, they had one session's share (docs/fs.md)"})
	}
	if o.Steady.Enabled() && err == nil && res.Extra["steady"] == 0 {
		res.Notes = append(res.Notes, metrics.Note{Code: "not-steady", Message: fmt.Sprintf(
			"a run went its whole --runtime %v without being steady by %s over %v: its figures were still moving; run longer, or loosen the criterion",
			o.Runtime, o.Steady, o.Steady.Window)})
	}
	if t.Verified && err == nil { // every job's pass read back what it wrote
		res.Notes = append(res.Notes, metrics.Note{Code: "verified", Message: fmt.Sprintf(
			"verify %s: read back all %d blocks written (%s) from storage after the run, in %v; every one as written",
			o.Verify.Kind, t.Blocks, units.FormatSize(t.Bytes), t.Took.Round(time.Millisecond))})
	}
	return res, err
}

// tally is what a run's jobs count besides their measurements: the
// operations their rate caps issued, by direction, and what the verify
// pass read back.
type tally struct {
	Issued        [2]int64
	Verified      bool
	Blocks, Bytes int64
	Took          time.Duration
}

// add adds another process's tally; the verify passes ran side by side.
func (t *tally) add(o tally) {
	t.Issued[0], t.Issued[1] = t.Issued[0]+o.Issued[0], t.Issued[1]+o.Issued[1]
	t.Verified = t.Verified || o.Verified
	t.Blocks, t.Bytes, t.Took = t.Blocks+o.Blocks, t.Bytes+o.Bytes, max(t.Took, o.Took)
}

// measure runs this process's jobs as threads of it, and the verify
// pass after them.
func (f *FS) measure(ctx context.Context, progress func(ops, bytes int64)) (*metrics.Result, tally, error) {
	o := &f.opts
	var t tally
	tracking := o.Verify.on() && !o.Verify.Only && o.readShare() < 100
	f.reset(ctx, tracking)
	dopts := driver.Options{Workers: len(f.jobs), Runtime: o.Runtime, Ramp: o.RampTime, ProcPerWorker: true, Steady: o.Steady}
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
	if res == nil {
		return nil, t, err
	}
	for _, j := range f.jobs {
		for d, p := range j.pace {
			if p != nil {
				t.Issued[d] += p.Issued()
			}
		}
	}
	if err == nil && tracking && o.Verify.Do {
		start := time.Now()
		v, verr := f.verifyWritten(ctx)
		if err = verr; err == nil {
			t.Verified, t.Blocks, t.Bytes, t.Took = true, v.blocks.Load(), v.bytes.Load(), time.Since(start)
		}
	}
	return res, t, err
}

// reset readies the jobs for a run: budgets, pacers, cursors, the record
// of what a verify reads back, and a cold page cache where asked.
func (f *FS) reset(ctx context.Context, tracking bool) {
	o := &f.opts
	sized := o.Runtime == 0 || o.RuntimeCaps // the job does its size (runtime, if any, a bound)
	budget := o.IOSize
	if budget == 0 && sized {
		budget = o.Size
	}
	if o.Loops > 1 && sized {
		budget *= int64(o.Loops) // fio's loops: the size again, another pass of the random map
	}
	f.runSeed = o.RandSeed
	if o.NoRandRepeat {
		f.runSeed = rand.Uint64() // fio's randrepeat=0: other offsets each run
	}
	for _, j := range f.jobs {
		j.limited = budget > 0
		ops := budget / o.BlockSize
		if pass := j.holedPass(o.SeqAdd/o.BlockSize, o.BlockSize); pass > 0 && sized {
			ops = min(ops, pass*int64(o.Loops))
		}
		j.sized = o.variableSizes() && j.limited
		if j.sized { // the budget is bytes, operations of the sizes drawn
			j.bytesLeft.Store(budget)
			ops = math.MaxInt64
		}
		if o.NumberIOs > 0 && (!j.limited || ops > o.NumberIOs) {
			j.limited, ops = true, o.NumberIOs // fio's number_ios: a bound on the rest
		}
		j.remaining.Store(ops)
		j.rr.Store(0)
		j.writes.Store(0)
		for d := range j.pace {
			j.pace[d] = driver.NewPacer(o.opsPerSecond(metrics.Op(d)), o.RateProcess, workload.ArrivalSeed(ctx, 2*(o.jobOffset+j.index)+d)) // each job its own arrivals, in whichever segment
		}
		if j.window != nil {
			j.window.reset(j.files)
		}
		for _, file := range j.files {
			file.cursor.Store(0)
			file.mapped.bits, file.mapped.set = nil, 0
			file.runSeed = mix(f.runSeed)
			file.written = nil
			if tracking {
				file.written = make([]uint64, (file.regionBlk+63)/64)
			}
			if o.Invalidate && !o.Direct && file.path != "" {
				dropCache(file)
			}
		}
	}
}

// paceNotes say when a rate cap was not met: the job's operations of a
// direction fell more than 5% short of it over the run. Who fell short is
// judged by the one rule of the report's (metrics.GeneratorBehind): a
// generator starved of CPU, or delayed past its share of what it
// measured, kept the rate from itself — not the target.
func (f *FS) paceNotes(res *metrics.Result, issued [2]int64) []metrics.Note {
	var notes []metrics.Note
	share := f.opts.readShare()
	who := "" // judged once, only for a run that fell short
	for d := range 2 {
		if (metrics.Op(d) == metrics.Read && share == 0) || (metrics.Op(d) == metrics.Write && share == 100) {
			continue // a direction the job does not issue has no rate to meet (--rate 10m caps both)
		}
		perSecond := f.opts.opsPerSecond(metrics.Op(d)) * float64(len(f.jobs))
		got := float64(res.ByOp[d].Ops) / res.Duration.Seconds()
		if perSecond > 0 && got < 0.95*perSecond {
			n := issued[d]
			if who == "" {
				who = fellShort(res)
			}
			late := metrics.CountAbove(res.ByOp[d].StartLag, int64(metrics.LateAfter))
			notes = append(notes, metrics.Note{Code: "rate-not-met", Message: fmt.Sprintf(
				"%ss ran at %.4g/s, below the %.4g/s that --rate/--rate_iops asked of %d jobs; %d of %d started over 1ms late: %s",
				metrics.Op(d), got, perSecond, len(f.jobs), late, n, who)})
		}
	}
	return notes
}

// fellShort says who kept a run from its rate (metrics.GeneratorBehind).
func fellShort(res *metrics.Result) string {
	m := metrics.RunMetrics(res)
	if !metrics.GeneratorBehind(m, res.Duration, runtime.NumCPU()) {
		return "the target did not keep up"
	}
	who := fmt.Sprintf("iolab, not the target, fell behind: its own delay was %.0f%% of the median it measured", m["gen_delay_pct"])
	if w, ok := m["gen_cpu_wait_pct"]; ok {
		who += fmt.Sprintf(", its threads waited for a CPU %.0f%% of the time they were ready to run", w)
	}
	return who
}

// dropCache drops a file's page cache, as fio's invalidate=1.
func dropCache(file *jobFile) {
	fd := file.fd
	if fd < 0 {
		var err error
		if fd, err = unix.Open(file.path, unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			return
		}
		defer unix.Close(fd)
	}
	_ = unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
}

// Close implements workload.Workload.
func (f *FS) Close() error {
	for _, j := range f.jobs {
		for _, file := range j.files {
			file.close()
		}
	}
	f.jobs = nil
	return nil
}

// take reserves one block of the job's budget.
func (j *job) take() bool {
	return !j.limited || (j.remaining.Add(-1) >= 0 && (!j.sized || j.bytesLeft.Load() > 0))
}

// nextSeqBytes is where a sequential operation of n bytes starts, with
// sizes drawn, and its bytes: where the last one ended (its start once
// that is the region's end), cut at the region's end, as fio cuts it.
func (file *jobFile) nextSeqBytes(n, region int64) (at, size int64) {
	for {
		old := file.cursor.Load()
		at = old
		if at >= region {
			at = 0
		}
		size = min(n, region-at)
		if file.cursor.CompareAndSwap(old, at+size) {
			return at, size
		}
	}
}

// nextSeq returns the file's next sequential block, wrapping at the
// region's end, add blocks after each (fio's offset modifier: seqBlock).
func (file *jobFile) nextSeq(add int64) int64 {
	return seqBlock(file.cursor.Add(1)-1, file.regionBlk, add)
}

// holedPass is how many operations a sequential job with holes (add
// blocks of bs after each) does before it ends at its region's end; 0: it
// wraps to the start and goes on, for its size. fio 3.33, write:4k of 4k
// blocks, size=32k: 8 writes at offset=0 in a file of 32k (the next
// offset, 32k, is the file's end: it wraps), 4 at offset=8k (40k: the
// region's end, not the file's), 4 more each loop; 4 at offset=0 in a file
// of 104k. (fio sets a new shared file up job by job, so in the first run
// its job 0 finds the file as long as its own region; iolab lays the file
// out whole first, as every later run finds it in fio too.)
func (j *job) holedPass(add, bs int64) int64 {
	if add <= 0 {
		return 0
	}
	var ops int64
	for _, file := range j.files {
		per := (file.regionBlk-1)/(1+add) + 1
		if per*(1+add)*bs >= file.wrapsAt {
			return 0
		}
		ops += per
	}
	return ops
}

// syncEvery is the number of writes between two syncs (0: never).
func (o *Options) syncEvery() int {
	switch {
	case o.Fsync > 0:
		return o.Fsync
	case o.Fdatasync > 0:
		return o.Fdatasync
	}
	return o.SyncFileRange.Every
}

// syncDue counts a write and reports whether a sync is due after it:
// after every every-th write but the job's last. fio issues the sync
// before the write that follows, so a job that ends on a multiple issues
// none after it — 256 writes at fsync=4 make 63 syncs, 96 at fsync=3 31,
// in both tools.
func (j *job) syncDue(every int) bool {
	return every > 0 && j.writes.Add(1)%int64(every) == 0 && !(j.limited && (j.remaining.Load() <= 0 || (j.sized && j.bytesLeft.Load() <= 0)))
}

// nextFile is the file of the job's next operation: round robin over its
// files, or over those open in its window.
func (j *job) nextFile() (*jobFile, error) {
	if j.window != nil {
		return j.window.next(j.files)
	}
	if len(j.files) == 1 {
		return j.files[0], nil
	}
	return j.files[(j.rr.Add(1)-1)%uint64(len(j.files))], nil
}

// closeWindow closes the files a window left open. The worker that opened
// them calls it before it ends: they are in its thread's own descriptor
// table (privateFDTable), which no other thread can close them in.
func (j *job) closeWindow() {
	if j.window != nil {
		j.window.reset(j.files)
	}
}

// done is called when an operation on file has completed.
func (j *job) done(file *jobFile) {
	if j.window != nil {
		j.window.done(file)
	}
}

// window is fio's openfiles below nrfiles: the job serves size files at a
// time round robin; a file leaves when its pass is issued and closes once
// its operations complete, and the next file opens. When every file has had
// its pass, another begins. One worker runs such a job, so no locks.
type window struct {
	size     int
	flags    int
	direct   bool
	open     []*jobFile
	nextOpen int // the next file to open in this pass
	turn     int
}

func (w *window) reset(files []*jobFile) {
	for _, file := range files {
		file.close()
		file.serving, file.inflight = false, 0
	}
	w.open, w.nextOpen, w.turn = w.open[:0], 0, 0
}

func (w *window) next(files []*jobFile) (*jobFile, error) {
	for len(w.open) < w.size {
		if w.nextOpen == len(files) {
			if len(w.open) > 0 {
				break
			}
			w.nextOpen = 0 // every file had its pass: another begins
		}
		file := files[w.nextOpen]
		w.nextOpen++
		if _, err := file.open(w.flags, w.direct); err != nil {
			return nil, err
		}
		file.left, file.serving = file.regionBlk, true
		w.open = append(w.open, file)
	}
	w.turn %= len(w.open)
	file := w.open[w.turn]
	file.left--
	file.inflight++
	if file.left > 0 {
		w.turn++
	} else {
		file.serving = false
		w.open = slices.Delete(w.open, w.turn, w.turn+1)
	}
	return file, nil
}

func (w *window) done(file *jobFile) {
	file.inflight--
	if !file.serving && file.inflight == 0 {
		file.close()
	}
}

// jobBase is where job j (of this segment's) starts its region in its
// files: fio's offset + J x offset_increment, J its number in the whole
// load.
func (o *Options) jobBase(j int) int64 { return o.Offset + int64(o.jobOffset+j)*o.OffsetIncrement }
