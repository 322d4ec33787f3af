package fs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/uring"
)

// picker decides, per operation, its direction and offset.
type picker struct {
	rng       *rand.Rand
	readPct   int
	random    bool
	randomMap bool     // every block once a pass (fio's default; not norandommap)
	offsets   *sampler // a non-uniform distribution's; nil: uniform
	blockSize int64
	seqAdd    int64       // blocks the offset modifier adds between sequential operations
	randSeq   int         // operations from each random offset (rw=randread:8); 0: one
	seqLeft   int         // of those, still to go
	last      int64       // the last block picked
	sizes     *[2]SizeMix // sizes drawn per operation (bssplit, bsrange); nil: blockSize
}

func (f *FS) newPicker(worker int) picker {
	return picker{
		rng:       rand.New(rand.NewPCG(uint64(worker)+1, 0x10ab^f.runSeed)),
		readPct:   f.opts.readShare(),
		random:    f.opts.RW.random(),
		randomMap: !f.opts.NoRandomMap,
		offsets:   f.offsets,
		blockSize: f.opts.BlockSize,
		seqAdd:    f.opts.SeqAdd / f.opts.BlockSize,
		randSeq:   f.opts.RandSeq,
		sizes:     f.sizes(),
	}
}

// sizes are the job's drawn sizes, or nil for one block size.
func (f *FS) sizes() *[2]SizeMix {
	if !f.opts.variableSizes() {
		return nil
	}
	return &f.opts.BlockSizes
}

// next picks an operation's direction, where in file it falls and its
// size.
func (p *picker) next(file *jobFile) (write bool, offset, n int64) {
	switch p.readPct {
	case 100:
	case 0:
		write = true
	default:
		write = p.rng.IntN(100) >= p.readPct
	}
	if p.sizes != nil {
		offset, n = p.sized(file, write)
		return write, offset, n
	}
	return write, file.base + p.block(file)*p.blockSize, p.blockSize
}

// sized picks, with sizes drawn, an operation's size and where it falls,
// as fio's: sequentially on from the last one's end (cut at the region's
// end), or at a random aligned block (cut at the region's end, or through
// the random map to the free blocks there). The job issues while its bytes
// are not done, so its last operation may go past them, as in fio.
func (p *picker) sized(file *jobFile, write bool) (offset, n int64) {
	n = p.sizes[boolInt(write)].draw(p.rng)
	region := file.regionBlk * p.blockSize
	if !p.random {
		off, n := file.nextSeqBytes(n, region)
		return file.base + off, n
	}
	// As fio's, a random offset leaves room for the direction's smallest
	// size before the region's end.
	fits := max(file.regionBlk-(p.sizes[boolInt(write)].smallest()+p.blockSize-1)/p.blockSize+1, 1)
	var off int64
	switch {
	case p.randomMap && p.offsets == nil:
		blk, blocks := file.mapped.take(file.regionBlk, fits, (n+p.blockSize-1)/p.blockSize, p.rng)
		return file.base + blk*p.blockSize, min(n, blocks*p.blockSize)
	case p.offsets != nil:
		off = p.block(file) * p.blockSize
	default:
		off = p.rng.Int64N(fits) * p.blockSize
	}
	return file.base + off, min(n, region-off)
}

// sizedMap is the random map of a job whose operations draw their sizes:
// a bit per block of the region, set when an operation covers it, as fio's
// axmap. As fio's, an operation starts at a random block, or the first free
// one after it when that is covered, and covers the free blocks from there
// up to its size: fio cuts an operation to the free blocks it finds, so the
// region is covered once a pass, no block twice (and the gaps fill from
// their starts: 370 writes of bssplit=512/10:4k/60:64k/30 cover 4m in fio,
// where starting anywhere in a gap made 1,100).
type sizedMap struct {
	mu   sync.Mutex
	bits []uint64
	set  int64
}

func (m *sizedMap) isSet(b int64) bool { return m.bits[b/64]&(1<<(b%64)) != 0 }

// take picks where the next operation of want blocks starts, at random
// below fits (or the first free block after that), and how many blocks it
// covers.
func (m *sizedMap) take(n, fits, want int64, rng *rand.Rand) (blk, blocks int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bits == nil || m.set == n { // a pass is done: another
		m.bits, m.set = make([]uint64, (n+63)/64), 0
	}
	blk = m.freeFrom(rng.Int64N(fits), n)
	for blocks = 0; blocks < want && blk+blocks < n && !m.isSet(blk+blocks); blocks++ {
		m.bits[(blk+blocks)/64] |= 1 << ((blk + blocks) % 64)
	}
	m.set += blocks
	return blk, blocks
}

// freeFrom is the first free block at b or after it, wrapping at n (the
// map has one).
func (m *sizedMap) freeFrom(b, n int64) int64 {
	for w := b / 64; ; w = (w + 1) % int64(len(m.bits)) {
		free := ^m.bits[w]
		if w == b/64 {
			free &^= 1<<(b%64) - 1 // the blocks before b in its word come last
		}
		if i := int64(w)*64 + int64(bits.TrailingZeros64(free)); free != 0 && i < n {
			return i
		}
		if w == int64(len(m.bits))-1 && b%64 != 0 {
			b = 0 // wrapped: the first word whole this time
		}
	}
}

// block is the block of the region the next operation falls on.
func (p *picker) block(file *jobFile) int64 {
	if !p.random {
		return file.nextSeq(p.seqAdd)
	}
	if p.seqLeft > 0 { // rw=randread:N: on from the last random offset
		p.seqLeft--
		p.last = (p.last + 1) % file.regionBlk
		return p.last
	}
	p.seqLeft = max(p.randSeq-1, 0)
	switch {
	case p.offsets != nil:
		p.last = p.offsets.next(p.rng) % file.regionBlk
	case p.randomMap:
		p.last = file.nextRandom()
	default:
		p.last = p.rng.Int64N(file.regionBlk)
	}
	return p.last
}

// op is an operation a worker has picked and not yet finished.
type op struct {
	file  *jobFile
	write bool
	off   int64
	n     int64 // its bytes
	trim  bool  // it discards its block (rw=trim, randtrim)
	due   int64 // the clock reading it may start at (rate caps); 0: at once
	asked int64 // when its place on the schedule was asked for
	paced bool  // due is a place on a rate cap's schedule: its response time counts from there
	check bool  // a read whose block is verified
}

func (p *op) dir() metrics.Op {
	if p.trim {
		return metrics.Trim
	}
	if p.write {
		return metrics.Write
	}
	return metrics.Read
}

// issuer is what one worker of any engine does around its operations:
// picking them, pacing them, filling and checking verify blocks, reading
// back the verify backlog and thinking.
type issuer struct {
	o       *Options
	j       *job
	clock   metrics.Clock
	stop    *driver.Stop
	rec     *metrics.Recorder
	pick    picker
	gen     *datagen.Generator
	v       *verifier // nil without --verify
	paced   bool      // the job has a rate cap
	checks  bool      // reads are verified (a read job, or verify_only)
	tracks  bool      // writes are recorded for the verify pass
	backlog []op      // written blocks not yet read back (verify_backlog)
	vbuf    []byte    // for reading the backlog back
	free    func()
	thought int // operations since the last think
}

func (f *FS) newIssuer(worker int, j *job, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) (*issuer, error) {
	o := &f.opts
	is := &issuer{o: o, j: j, clock: clock, stop: stop, rec: rec, pick: f.newPicker(worker),
		gen: datagen.New(o.Data, uint64(worker)+1), free: func() {}, paced: j.pace[0] != nil || j.pace[1] != nil}
	if o.Verify.on() {
		is.v = newVerifier(o.Verify.Kind)
		is.checks = o.readShare() == 100 || o.Verify.Only
		is.tracks = !is.checks
		if o.Verify.Backlog > 0 && is.tracks {
			var err error
			if is.vbuf, is.free, err = AlignedBuffer(int(o.BlockSize)); err != nil {
				return nil, err
			}
		}
	}
	return is, nil
}

// next picks the next operation, which the caller has taken from the
// job's budget.
func (is *issuer) next() (op, error) {
	file, err := is.j.nextFile()
	if err != nil {
		return op{}, err
	}
	write, off, n := is.pick.next(file)
	if is.j.sized {
		is.j.bytesLeft.Add(-n)
	}
	p := op{file: file, write: write && !is.o.RW.trims(), off: off, n: n, trim: is.o.RW.trims()}
	if write && is.o.Verify.Only {
		p.write = false // verify_only: read back what the write would have written
	}
	if is.paced {
		now := is.clock.Now()
		if is.pick.readPct > 0 && is.pick.readPct < 100 && is.j.pace[p.dir()].Ahead(now) && !is.j.pace[1-p.dir()].Ahead(now) {
			// As fio: a mixed job whose direction is ahead of its cap
			// issues the other one rather than wait.
			p.write = !p.write
		}
		if pc := is.j.pace[p.dir()]; pc != nil {
			p.due, p.asked, p.paced = pc.Due(is.clock, now), now, true
		}
	}
	p.check = is.checks && !p.write
	return p, nil
}

// recordResponse completes the record of a paced operation just
// recorded: its response time, from its place on the schedule, not from
// when it started (a late start is queueing a client would see;
// coordinated omission if left out), and how late it started.
func (p *op) recordResponse(rec *metrics.Recorder) {
	if p.paced {
		rec.RecordPaced(p.dir(), p.due, p.asked)
	}
}

// fill makes buf the data p writes.
func (is *issuer) fill(buf []byte, p *op) {
	if is.v != nil {
		is.v.fill(buf, p.file.seed, p.off)
		return
	}
	is.gen.Refill(buf)
}

// completed is called with the data of a finished operation: it checks a
// verified read and records a verified write for reading back.
func (is *issuer) completed(p *op, buf []byte) error {
	switch {
	case p.check:
		if err := is.v.check(buf, p.file.path, p.file.seed, p.off); err != nil {
			is.rec.OpError(metrics.Read, "content", err)
			return err
		}
	case p.write && is.tracks:
		p.file.markWritten(p.off, is.o.BlockSize)
		if is.vbuf != nil {
			is.backlog = append(is.backlog, *p)
		}
	}
	return nil
}

// backlogDue says verify_backlog blocks await reading back.
func (is *issuer) backlogDue() bool { return is.vbuf != nil && len(is.backlog) >= is.o.Verify.Backlog }

// readBacklog reads back and checks the backlog's blocks, recorded as the
// job's reads (as fio counts them).
func (is *issuer) readBacklog() error {
	for _, p := range is.backlog {
		fd, opened := p.file.fd, false
		if fd < 0 { // closed by an openfiles window since it was written
			var err error
			if fd, _, err = OpenFile(p.file.path, unix.O_RDONLY, is.o.Direct); err != nil {
				is.rec.Error(err)
				return err
			}
			opened = true
		}
		start := is.clock.Now()
		n, err := unix.Pread(fd, is.vbuf, p.off)
		end := is.clock.Now()
		if opened {
			_ = unix.Close(fd)
		}
		if err != nil || n != len(is.vbuf) {
			err = p.file.ioError("read", p.off, n, err, len(is.vbuf))
			is.rec.OpError(metrics.Read, ioCode(err), err)
			return err
		}
		is.rec.Record(metrics.Read, int64(n), end, end-start)
		if err := is.v.check(is.vbuf, p.file.path, p.file.seed, p.off); err != nil {
			is.rec.OpError(metrics.Read, "content", err)
			return err
		}
	}
	is.backlog = is.backlog[:0]
	return nil
}

// think pauses for thinktime after every thinktime_blocks operations.
func (is *issuer) think() {
	if is.o.ThinkTime <= 0 {
		return
	}
	if is.thought++; is.thought >= is.o.ThinkTimeBlocks {
		is.thought = 0
		driver.SleepUntil(is.clock, is.clock.Now()+int64(is.o.ThinkTime), is.stop)
	}
}

// ioError describes a failed or short operation on the file, with its
// offset and length as fio names them (offset=110608384, buflen=4096).
func (file *jobFile) ioError(op string, off int64, n int, err error, want int) error {
	if err == nil {
		err = io.ErrShortWrite
		if op == "read" {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%s %s offset=%d buflen=%d: %d of %d bytes: %w", op, file.path, off, want, n, want, err)
	}
	return fmt.Errorf("%s %s offset=%d buflen=%d: %w", op, file.path, off, want, err)
}

// ioCode is how a failed read, write or sync is counted by its direction:
// the error number's name (EIO, ENOSPC), as fio names them, or "short"
// for a transfer of fewer bytes than asked.
func ioCode(err error) string {
	var errno unix.Errno
	switch {
	case errors.As(err, &errno):
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
		return "errno-" + strconv.Itoa(int(errno))
	case errors.Is(err, io.ErrShortWrite), errors.Is(err, io.ErrUnexpectedEOF):
		return "short"
	}
	return "io"
}

// psyncWorker is one of iodepth synchronous issuers of a job: pread/pwrite
// in a loop, so a job with iodepth N keeps N operations in flight.
func (f *FS) psyncWorker(_ context.Context, worker int, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) error {
	privateFDTable()
	defer stop.ThreadEnds()
	o := &f.opts
	j := f.jobs[worker/o.IODepth]
	whole, free, err := AlignedBuffer(int(o.maxBlock()))
	if err != nil {
		return err
	}
	defer free()
	is, err := f.newIssuer(worker, j, clock, stop, rec)
	if err != nil {
		return err
	}
	defer is.free()
	defer j.closeWindow()
	is.gen.Fill(whole)
	var yield driver.Yielder
	for !stop.Stopped() && j.take() {
		p, err := is.next()
		if err != nil {
			rec.Error(err)
			return err
		}
		buf := whole[:p.n]
		if p.due > 0 && !driver.SleepUntil(clock, p.due, stop) {
			break // the run ended before the operation's time
		}
		var n int
		var start int64
		switch {
		case p.trim:
			start = clock.Now()
			if err = p.file.trim(p.off, p.n); err == nil {
				n = len(buf)
			}
		case p.write:
			is.fill(buf, &p)
			start = clock.Now()
			n, err = unix.Pwrite(p.file.fd, buf, p.off)
		default:
			start = clock.Now()
			n, err = unix.Pread(p.file.fd, buf, p.off)
		}
		end := clock.Now()
		yield.Tick(end)
		if err != nil || n != len(buf) {
			err = p.file.ioError(p.dir().String(), p.off, n, err, len(buf))
			rec.OpError(p.dir(), ioCode(err), err)
			return err
		}
		rec.Record(p.dir(), int64(n), end, end-start)
		p.recordResponse(rec)
		if err := is.completed(&p, buf); err != nil {
			return err
		}
		if p.write && j.syncDue(o.syncEvery()) {
			if err := f.syncFile(p.file, clock, rec); err != nil {
				return err
			}
		}
		j.done(p.file)
		if is.backlogDue() {
			if err := is.readBacklog(); err != nil {
				return err
			}
		}
		is.think()
	}
	return nil
}

// nullWorker is a job of fio's null engine: it picks each operation's
// direction and offset as the others do and times an operation that does
// nothing, so what it measures is iolab's own cost per operation.
func (f *FS) nullWorker(_ context.Context, worker int, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) error {
	j := f.jobs[worker]
	is, err := f.newIssuer(worker, j, clock, stop, rec)
	if err != nil {
		return err
	}
	var yield driver.Yielder
	for !stop.Stopped() && j.take() {
		p, _ := is.next() // one file, always open
		if p.due > 0 && !driver.SleepUntil(clock, p.due, stop) {
			break // the run ended before the operation's time
		}
		start := clock.Now()
		end := clock.Now()
		yield.Tick(end)
		rec.Record(p.dir(), p.n, end, end-start)
		p.recordResponse(rec)
		is.think()
	}
	return nil
}

func (f *FS) syncFile(file *jobFile, clock metrics.Clock, rec *metrics.Recorder) error {
	o := &f.opts
	start := clock.Now()
	var err error
	switch {
	case o.Fsync > 0:
		err = unix.Fsync(file.fd)
	case o.Fdatasync > 0:
		err = unix.Fdatasync(file.fd)
	default:
		err = unix.SyncFileRange(file.fd, 0, 0, o.SyncFileRange.Flags)
	}
	end := clock.Now()
	if err != nil {
		err = fmt.Errorf("%s %s: %w", o.syncName(), file.path, err)
		rec.OpError(metrics.Sync, ioCode(err), err)
		return err
	}
	rec.Record(metrics.Sync, 0, end, end-start)
	return nil
}

// syncName is the system call the job's syncs make.
func (o *Options) syncName() string {
	switch {
	case o.Fsync > 0:
		return "fsync"
	case o.Fdatasync > 0:
		return "fdatasync"
	}
	return "sync_file_range"
}

// The main goroutine keeps the process's first thread for itself: a worker
// that unshares its descriptor table and exits locked (privateFDTable) gets
// its thread retired, but the first thread cannot be — Go parks it for good,
// and with it a private copy of the table, whose descriptors (a run's files,
// its rings) would stay open until the process ends, and which
// /proc/self/fd would show as the process's.
func init() { runtime.LockOSThread() }

// privateFDTable locks the calling goroutine to its thread and gives the
// thread a private copy of the file descriptor table. The kernel then looks
// up the job's file without taking a reference on every read and write —
// the atomic increments a multi-threaded process otherwise pays per system
// call, and fio's single-threaded job processes never do. The goroutine must
// exit without unlocking, so the runtime retires the thread with its table
// (and says so to the run: driver.Stop.ThreadEnds, as it returns).
func privateFDTable() {
	runtime.LockOSThread()
	_ = unix.Unshare(unix.CLONE_FILES) // best effort: without it, only slower
}

// slot is one in-flight io_uring request.
type slot struct {
	buf     []byte
	startNs int64
	op      op
}

// User data of the requests that are not a slot's.
const (
	syncTag  = ^uint64(0)
	timerTag = ^uint64(1)
)

// uringWorker runs one job on its own ring, keeping up to iodepth
// operations in flight: it refills free slots, submitting every
// iodepth_batch_submit of them, submits the last with the wait for the
// first completion, then reaps every posted completion with a single clock
// read. In steady state that is one system call per operation.
//
// An operation a rate cap holds back waits as the next one, with a timeout
// request queued for its time, so completions are still reaped as they come;
// a thinktime pause, a sync and a verify backlog each wait for the
// operations in flight first.
func (f *FS) uringWorker(_ context.Context, worker int, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) error {
	privateFDTable() // also locks the thread, as the single-issuer ring needs
	defer stop.ThreadEnds()
	o := &f.opts
	ring, err := uring.New(uint32(o.IODepth + 2))
	if err != nil {
		return fmt.Errorf("--ioengine io_uring: %w; use --ioengine psync", err)
	}
	defer ring.Close()
	bs := int(o.maxBlock())
	mem, free, err := AlignedBuffer(bs * o.IODepth)
	if err != nil {
		return err
	}
	defer free()
	u := &uringJob{o: o, j: f.jobs[worker], ring: ring, clock: clock, stop: stop, rec: rec,
		readOp: uring.OpRead, writeOp: uring.OpWrite, every: o.syncEvery()}
	// Registered once, the buffers are not pinned again for every request;
	// a kernel that refuses (memlock limits) gets plain reads and writes.
	if ring.RegisterBuffer(mem) == nil {
		u.readOp, u.writeOp = uring.OpReadFixed, uring.OpWriteFixed
	}
	if u.is, err = f.newIssuer(worker, u.j, clock, stop, rec); err != nil {
		return err
	}
	defer u.is.free()
	defer u.j.closeWindow()
	u.slots = make([]slot, o.IODepth)
	u.idle = make([]int, 0, o.IODepth)
	for i := range u.slots {
		u.slots[i].buf = mem[i*bs : (i+1)*bs : (i+1)*bs]
		u.is.gen.Fill(u.slots[i].buf)
		u.idle = append(u.idle, i)
	}
	return u.run()
}

// uringJob is one job's state on its ring.
type uringJob struct {
	o               *Options
	j               *job
	is              *issuer
	ring            *uring.Ring
	clock           metrics.Clock
	stop            *driver.Stop
	rec             *metrics.Recorder
	readOp, writeOp uint8
	slots           []slot
	idle            []int
	next            op   // picked, waiting for its time
	waiting         bool // next holds an operation
	timerSet        bool
	inflight        int
	syncing         bool
	syncStart       int64
	syncFile        *jobFile
	thinking        bool // a thinktime_blocks batch is issued: pause once it completes
	firstErr        error
	yield           driver.Yielder
	every           int
	end             int64 // the clock at the last wait's return: every completion it reaped ended then
}

// run is the job's loop: refill, wait, reap — until its budget is spent,
// the run stops, or an operation fails. Split from one 180-line function
// into these methods, job b of bench/fs_vs_fio kept its speed: 1.083
// [0.958, 1.181] of fio's IOPS quiet (1.026 before), 1.066 [1.025, 1.183]
// beside stress-ng --cpu 4 (1.001 before), CPU per op 0.96x and 0.93x.
func (u *uringJob) run() error {
	complete := u.complete // one method value for every reap
	for {
		if err := u.refill(); err != nil {
			return err
		}
		if u.inflight == 0 {
			done, err := u.drained()
			if done || err != nil {
				return err
			}
			continue
		}
		if u.waiting && !u.timerSet && !u.syncing && !u.thinking {
			if d := u.next.due - u.clock.Now(); d > 0 {
				u.ring.QueueTimeout(time.Duration(d), timerTag)
				u.timerSet = true
			}
		}
		if err := u.ring.SubmitAndWait(1); err != nil {
			u.rec.Error(err)
			return err
		}
		u.end = u.clock.Now()
		u.yield.Tick(u.end)
		u.ring.Reap(complete)
	}
}

// refill queues operations into the free slots, while the job may issue.
func (u *uringJob) refill() error {
	o, j, is := u.o, u.j, u.is
	for len(u.idle) > 0 && !u.syncing && !u.thinking && !is.backlogDue() && u.firstErr == nil && !u.stop.Stopped() {
		if !u.waiting {
			if !j.take() {
				break
			}
			var err error
			if u.next, err = is.next(); err != nil {
				u.rec.Error(err)
				u.firstErr = err
				break
			}
			u.waiting = true
		}
		if u.next.due > 0 && (u.next.due > u.clock.Now() || u.stop.Past(u.next.due)) { // paced: no clock read for a job without a cap
			break // not yet its time; or past the run, which it waits to end
		}
		u.waiting = false
		if u.ring.Queued() >= uint32(o.IODepthBatch) {
			// A batch is ready and another request follows: submit it now
			// (fio's iodepth_batch_submit, default 1), which keeps the
			// device fed — larger batches are plugged and dispatched
			// together. The last batch of a refill goes with the wait, in
			// the same system call.
			if err := u.ring.SubmitAndWait(0); err != nil {
				u.rec.Error(err)
				return err
			}
		}
		u.issue()
	}
	return nil
}

// issue queues the operation picked into a free slot, and the sync due
// after it.
func (u *uringJob) issue() {
	o, j, next := u.o, u.j, u.next
	i := u.idle[len(u.idle)-1]
	u.idle = u.idle[:len(u.idle)-1]
	s := &u.slots[i]
	s.op = next
	buf := s.buf[:next.n]
	code := u.readOp
	if next.write {
		code = u.writeOp
		u.is.fill(buf, &next)
	}
	s.startNs = u.clock.Now()
	u.ring.Queue(code, next.file.fd, buf, next.off, uint64(i))
	u.inflight++
	if next.write && j.syncDue(u.every) {
		// Drained: runs after every write queued before it.
		u.syncStart, u.syncFile = u.clock.Now(), next.file
		if j.window != nil {
			next.file.inflight++ // an openfiles window closes the file only after its sync
		}
		if o.SyncFileRange.Every > 0 {
			u.ring.QueueSyncFileRange(next.file.fd, uint32(o.SyncFileRange.Flags), syncTag)
		} else {
			u.ring.QueueFsync(next.file.fd, o.Fsync == 0, syncTag)
		}
		u.inflight++
		u.syncing = true
	}
	if o.ThinkTime > 0 {
		if u.is.thought++; u.is.thought >= o.ThinkTimeBlocks {
			u.is.thought, u.thinking = 0, true
		}
	}
}

// drained is what the job does with nothing in flight: it ends (done),
// pauses for its thinktime, checks its verify backlog, or waits for its
// next operation's time.
func (u *uringJob) drained() (done bool, err error) {
	switch {
	case u.firstErr != nil:
		return true, u.firstErr
	case u.thinking:
		driver.SleepUntil(u.clock, u.clock.Now()+int64(u.o.ThinkTime), u.stop)
		u.thinking = false
		return false, nil
	case u.is.backlogDue():
		return false, u.is.readBacklog()
	case u.waiting && !u.stop.Stopped():
		driver.SleepUntil(u.clock, u.next.due, u.stop)
		return false, nil
	}
	return true, nil
}

// complete takes one completion: a timer's, a sync's, or an operation's.
func (u *uringJob) complete(c uring.CQE) {
	switch c.UserData {
	case timerTag:
		u.timerSet = false
		return
	case syncTag:
		u.inflight--
		u.syncing = false
		defer u.j.done(u.syncFile)
		if c.Res < 0 {
			err := fmt.Errorf("%s %s: %w", u.o.syncName(), u.syncFile.path, unix.Errno(-c.Res))
			u.rec.OpError(metrics.Sync, ioCode(err), err)
			u.firstErr = err
			return
		}
		u.rec.Record(metrics.Sync, 0, u.end, u.end-u.syncStart)
		return
	}
	u.inflight--
	s := &u.slots[c.UserData]
	u.idle = append(u.idle, int(c.UserData))
	defer u.j.done(s.op.file)
	if c.Res != int32(s.op.n) {
		var e error
		if c.Res < 0 {
			e = unix.Errno(-c.Res)
		}
		err := s.op.file.ioError(s.op.dir().String(), s.op.off, max(int(c.Res), 0), e, int(s.op.n))
		u.rec.OpError(s.op.dir(), ioCode(err), err)
		if u.firstErr == nil {
			u.firstErr = err
		}
		return
	}
	u.rec.Record(s.op.dir(), s.op.n, u.end, u.end-s.startNs)
	s.op.recordResponse(u.rec)
	if err := u.is.completed(&s.op, s.buf); err != nil && u.firstErr == nil {
		u.firstErr = err
	}
}
