package frames

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/workload/fs"
)

// thread writes or reads whole frames, one at a time.
type thread struct {
	f        *Frames
	clock    metrics.Clock
	rec      *metrics.Recorder
	buf      []byte
	release  func()
	gen      *datagen.Generator
	fellBack bool
	id       int
	timings  []metrics.FrameTiming // the frames this thread handled
	yield    driver.Yielder        // passes through the scheduler between chunks
}

func (t *thread) init(worker int) error {
	t.id = worker
	size := int(min(t.f.opts.Profile.FrameBytes(), chunkBytes))
	buf, release, err := fs.AlignedBuffer(size)
	if err != nil {
		return err
	}
	t.buf, t.release = buf, release
	t.gen = datagen.New(t.f.opts.Data, uint64(worker)+1)
	if !t.f.opts.Read {
		t.gen.Fill(t.buf)
	}
	return nil
}

// free releases the buffer; a second call does nothing.
func (t *thread) free() {
	if t.release != nil {
		t.release()
		t.release = nil
	}
}

// frame writes or reads frame i, recording open, I/O and close apart and
// the whole frame as one write or read, and appends its timing.
func (t *thread) frame(i int) error {
	o := &t.f.opts
	path := t.f.path(i)
	flags, op := unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, metrics.Write
	if o.Read {
		flags, op = unix.O_RDONLY, metrics.Read
	}
	start := t.clock.Now()
	fd, fellBack, err := fs.OpenFile(path, flags, o.Direct)
	opened := t.clock.Now()
	if err != nil {
		t.rec.OpError(metrics.Open, "open", err)
		return err
	}
	t.fellBack = t.fellBack || fellBack
	t.rec.Record(metrics.Open, 0, opened, opened-start)
	if o.frameDelay != nil {
		o.frameDelay(i)
	}
	size := o.Profile.FrameBytes()
	for off := int64(0); off < size; {
		chunk := t.buf[:min(int64(len(t.buf)), size-off)]
		var n int
		if o.Read {
			n, err = unix.Pread(fd, chunk, off)
		} else {
			t.gen.Refill(chunk)
			n, err = unix.Pwrite(fd, chunk, off)
		}
		if err == nil && n == 0 {
			err = fmt.Errorf("frame %s is shorter than %d bytes", path, size)
		}
		if err != nil {
			unix.Close(fd)
			err = fmt.Errorf("%s %s: %w", op, path, err)
			t.rec.OpError(op, "io", err)
			return err
		}
		off += int64(n)
		t.yield.Tick(t.clock.Now())
	}
	done := t.clock.Now()
	err = unix.Close(fd)
	closed := t.clock.Now()
	if err != nil {
		err = fmt.Errorf("close %s: %w", path, err)
		t.rec.OpError(metrics.Close, "close", err)
		return err
	}
	t.rec.Record(metrics.Close, 0, closed, closed-done)
	t.rec.Record(op, size, closed, closed-start)
	t.timings = append(t.timings, metrics.FrameTiming{Frame: i, Thread: t.id, StartNs: start,
		OpenNs: opened - start, IONs: done - opened, CloseNs: closed - done})
	return nil
}
