package frames

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/workload/fs"
)

// stampEvery is how often a frame's random content is re-stamped for the
// next frame: every 4 KiB piece of every frame is unique (what deduplicating
// storage compares), at an eighth of the stamps of every sector.
const stampEvery = 4096

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
	stream   int                   // the stream file, opened once per thread; -1 without one
	timings  []metrics.FrameTiming // the frames this thread handled
	yield    driver.Yielder        // passes through the scheduler between chunks
}

func (t *thread) init(worker int) error {
	o := &t.f.opts
	t.id, t.stream = worker, -1
	size := PieceBytes(t.f.target(), o.Direct)
	if t.f.files == nil {
		size = max(min(t.f.frameBytes, size), 4096)
	}
	buf, release, err := fs.AlignedBuffer(int(size))
	if err != nil {
		return err
	}
	t.buf, t.release = buf, release
	t.gen = datagen.New(o.Data, uint64(worker)+1)
	if !o.Read {
		t.gen.Fill(t.buf)
	}
	if o.Stream != "" {
		flags := unix.O_WRONLY | unix.O_CREAT
		if o.Read {
			flags = unix.O_RDONLY
		}
		if t.stream, t.fellBack, err = fs.OpenFile(o.Stream, flags, o.Direct); err != nil {
			t.free()
			return fmt.Errorf("--stream %w", err)
		}
	}
	return nil
}

// free releases the buffer and the stream file; a second call does nothing.
func (t *thread) free() {
	if t.release != nil {
		t.release()
		t.release = nil
	}
	if t.stream >= 0 {
		_ = unix.Close(t.stream)
		t.stream = -1
	}
}

// failed records a failed step of a frame, unless the run goes on past
// failed frames (then the run counts them itself).
func (t *thread) failed(op metrics.Op, code string, err error) error {
	if !t.f.opts.KeepGoing {
		t.rec.OpError(op, code, err)
	}
	return err
}

// frame writes or reads frame i, played at position pos, recording open,
// I/O and close apart and the whole frame as one write or read, and
// appends its timing. In stream mode the frame is its range of the stream
// file, which stays open: nothing is opened or closed.
func (t *thread) frame(i, pos int) error {
	o := &t.f.opts
	path := t.f.path(i)
	flags, op := unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, metrics.Write
	if o.Read {
		flags, op = unix.O_RDONLY, metrics.Read
	}
	size, base := t.f.size(i), int64(0)
	start := t.clock.Now()
	fd, opened := t.stream, start
	if fd >= 0 {
		base = int64(i) * size
	} else {
		var fellBack bool
		var err error
		fd, fellBack, err = fs.OpenFile(path, flags, o.Direct)
		opened = t.clock.Now()
		if err != nil {
			return t.failed(metrics.Open, "open", err)
		}
		t.fellBack = t.fellBack || fellBack
		t.rec.Record(metrics.Open, 0, opened, opened-start)
	}
	if o.frameDelay != nil {
		o.frameDelay(i)
	}
	for off := int64(0); off < size; {
		// A read asks for whole 4 KiB blocks (O_DIRECT needs them); a
		// frame file of another size ends short of it.
		want := min(int64(len(t.buf)), (size-off+4095)/4096*4096)
		chunk := t.buf[:want]
		var n int
		var err error
		if o.Read {
			n, err = unix.Pread(fd, chunk, base+off)
			n = int(min(int64(n), size-off))
		} else {
			chunk = chunk[:min(want, size-off)]
			t.gen.RefillEvery(chunk, stampEvery)
			n, err = unix.Pwrite(fd, chunk, base+off)
		}
		if err == nil && n == 0 {
			err = fmt.Errorf("frame %s is shorter than %d bytes", path, size)
		}
		if err != nil {
			if t.stream < 0 {
				unix.Close(fd)
			}
			return t.failed(op, "io", fmt.Errorf("%s %s: %w", op, path, err))
		}
		off += int64(n)
		t.yield.Tick(t.clock.Now())
	}
	done := t.clock.Now()
	closed := done
	if t.stream < 0 {
		err := unix.Close(fd)
		closed = t.clock.Now()
		if err != nil {
			return t.failed(metrics.Close, "close", fmt.Errorf("close %s: %w", path, err))
		}
		t.rec.Record(metrics.Close, 0, closed, closed-done)
	}
	t.rec.Record(op, size, closed, closed-start)
	t.timings = append(t.timings, metrics.FrameTiming{Frame: i, Pos: pos, Thread: t.id, StartNs: start,
		OpenNs: opened - start, IONs: done - opened, CloseNs: closed - done})
	return nil
}
