package fs

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"

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
	blockSize int64
}

func (f *FS) newPicker(worker int) picker {
	return picker{
		rng:       rand.New(rand.NewPCG(uint64(worker)+1, 0x10ab)),
		readPct:   f.opts.readShare(),
		random:    f.opts.RW.random(),
		blockSize: f.opts.BlockSize,
	}
}

func (p *picker) next(j *job) (write bool, offset int64) {
	switch p.readPct {
	case 100:
	case 0:
		write = true
	default:
		write = p.rng.IntN(100) >= p.readPct
	}
	if p.random {
		return write, p.rng.Int64N(j.regionBlk) * p.blockSize
	}
	return write, j.nextSeq() * p.blockSize
}

// ioError describes a failed or short operation on the job's file.
func (j *job) ioError(op string, n int, err error, want int) error {
	if err == nil {
		err = io.ErrShortWrite
		if op == "read" {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%s %s: %d of %d bytes: %w", op, j.path, n, want, err)
	}
	return fmt.Errorf("%s %s: %w", op, j.path, err)
}

// psyncWorker is one of iodepth synchronous issuers of a job: pread/pwrite
// in a loop, so a job with iodepth N keeps N operations in flight.
func (f *FS) psyncWorker(_ context.Context, worker int, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) error {
	privateFDTable()
	o := &f.opts
	j := f.jobs[worker/o.IODepth]
	buf, free, err := AlignedBuffer(int(o.BlockSize))
	if err != nil {
		return err
	}
	defer free()
	gen := datagen.New(o.Data, uint64(worker)+1)
	gen.Fill(buf)
	pick := f.newPicker(worker)
	var yield driver.Yielder
	for !stop.Stopped() && j.take() {
		write, off := pick.next(j)
		var n int
		var start int64
		if write {
			gen.Refill(buf)
			start = clock.Now()
			n, err = unix.Pwrite(j.fd, buf, off)
		} else {
			start = clock.Now()
			n, err = unix.Pread(j.fd, buf, off)
		}
		end := clock.Now()
		yield.Tick(end)
		dir := metrics.Read
		if write {
			dir = metrics.Write
		}
		if err != nil || n != len(buf) {
			err = j.ioError(dir.String(), n, err, len(buf))
			rec.Error(err)
			return err
		}
		rec.Record(dir, int64(n), end, end-start)
		if write && j.syncDue(o.syncEvery()) {
			if err := f.syncFile(j, clock, rec); err != nil {
				return err
			}
		}
	}
	return nil
}

// nullWorker is a job of fio's null engine: it picks each operation's
// direction and offset as the others do and times an operation that does
// nothing, so what it measures is iolab's own cost per operation.
func (f *FS) nullWorker(_ context.Context, worker int, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) error {
	j := f.jobs[worker]
	bs := f.opts.BlockSize
	pick := f.newPicker(worker)
	var yield driver.Yielder
	for !stop.Stopped() && j.take() {
		write, _ := pick.next(j)
		start := clock.Now()
		end := clock.Now()
		yield.Tick(end)
		dir := metrics.Read
		if write {
			dir = metrics.Write
		}
		rec.Record(dir, bs, end, end-start)
	}
	return nil
}

func (f *FS) syncFile(j *job, clock metrics.Clock, rec *metrics.Recorder) error {
	start := clock.Now()
	var err error
	if f.opts.Fsync > 0 {
		err = unix.Fsync(j.fd)
	} else {
		err = unix.Fdatasync(j.fd)
	}
	end := clock.Now()
	if err != nil {
		err = fmt.Errorf("fsync %s: %w", j.path, err)
		rec.Error(err)
		return err
	}
	rec.Record(metrics.Sync, 0, end, end-start)
	return nil
}

// privateFDTable locks the calling goroutine to its thread and gives the
// thread a private copy of the file descriptor table. The kernel then looks
// up the job's file without taking a reference on every read and write —
// the atomic increments a multi-threaded process otherwise pays per system
// call, and fio's single-threaded job processes never do. The goroutine must
// exit without unlocking, so the runtime retires the thread with its table.
func privateFDTable() {
	runtime.LockOSThread()
	_ = unix.Unshare(unix.CLONE_FILES) // best effort: without it, only slower
}

// slot is one in-flight io_uring request.
type slot struct {
	buf     []byte
	startNs int64
	dir     metrics.Op
}

const syncTag = ^uint64(0)

// uringWorker runs one job on its own ring, keeping up to iodepth
// operations in flight: it refills free slots, submitting every
// iodepth_batch_submit of them, submits the last with the wait for the
// first completion, then reaps every posted completion with a single clock
// read. In steady state that is one system call per operation.
func (f *FS) uringWorker(_ context.Context, worker int, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) error {
	privateFDTable() // also locks the thread, as the single-issuer ring needs
	o := &f.opts
	j := f.jobs[worker]
	ring, err := uring.New(uint32(o.IODepth + 1))
	if err != nil {
		return fmt.Errorf("--ioengine io_uring: %w; use --ioengine psync", err)
	}
	defer ring.Close()
	bs := int(o.BlockSize)
	mem, free, err := AlignedBuffer(bs * o.IODepth)
	if err != nil {
		return err
	}
	defer free()
	// Registered once, the buffers are not pinned again for every request;
	// a kernel that refuses (memlock limits) gets plain reads and writes.
	readOp, writeOp := uring.OpRead, uring.OpWrite
	if ring.RegisterBuffer(mem) == nil {
		readOp, writeOp = uring.OpReadFixed, uring.OpWriteFixed
	}
	slots := make([]slot, o.IODepth)
	idle := make([]int, 0, o.IODepth)
	for i := range slots {
		slots[i].buf = mem[i*bs : (i+1)*bs : (i+1)*bs]
		idle = append(idle, i)
	}
	gen := datagen.New(o.Data, uint64(worker)+1)
	for i := range slots {
		gen.Fill(slots[i].buf)
	}
	pick := f.newPicker(worker)
	inflight, syncing, syncStart := 0, false, int64(0)
	var firstErr error
	var yield driver.Yielder
	for {
		for len(idle) > 0 && !syncing && firstErr == nil && !stop.Stopped() && j.take() {
			if ring.Queued() >= uint32(o.IODepthBatch) {
				// A batch is ready and another request follows: submit it
				// now (fio's iodepth_batch_submit, default 1), which keeps
				// the device fed — larger batches are plugged and dispatched
				// together. The last batch of a refill goes with the wait
				// below, in the same system call.
				if err := ring.SubmitAndWait(0); err != nil {
					rec.Error(err)
					return err
				}
			}
			i := idle[len(idle)-1]
			idle = idle[:len(idle)-1]
			s := &slots[i]
			write, off := pick.next(j)
			op := readOp
			s.dir = metrics.Read
			if write {
				op, s.dir = writeOp, metrics.Write
				gen.Refill(s.buf)
			}
			s.startNs = clock.Now()
			ring.Queue(op, j.fd, s.buf, off, uint64(i))
			inflight++
			if write && j.syncDue(o.syncEvery()) {
				// Drained: runs after every write queued before it.
				syncStart = clock.Now()
				ring.QueueFsync(j.fd, o.Fsync == 0, syncTag)
				inflight++
				syncing = true
			}
		}
		if inflight == 0 {
			return firstErr
		}
		if err := ring.SubmitAndWait(1); err != nil {
			rec.Error(err)
			return err
		}
		end := clock.Now()
		yield.Tick(end)
		ring.Reap(func(c uring.CQE) {
			inflight--
			if c.UserData == syncTag {
				syncing = false
				if c.Res < 0 {
					err := fmt.Errorf("fsync %s: %w", j.path, unix.Errno(-c.Res))
					rec.Error(err)
					firstErr = err
					return
				}
				rec.Record(metrics.Sync, 0, end, end-syncStart)
				return
			}
			s := &slots[c.UserData]
			idle = append(idle, int(c.UserData))
			if c.Res != int32(bs) {
				var e error
				if c.Res < 0 {
					e = unix.Errno(-c.Res)
				}
				err := j.ioError(s.dir.String(), max(int(c.Res), 0), e, bs)
				rec.Error(err)
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			rec.Record(s.dir, int64(bs), end, end-s.startNs)
		})
	}
}
