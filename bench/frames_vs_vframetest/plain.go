package main

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/bench/internal/harness"
	"github.com/iolab/iolab/internal/workload/frames"
	"github.com/iolab/iolab/internal/workload/fs"
)

// runPlain writes the case's frames into dir as a writer that does nothing
// else would: threads goroutines take the next frame, open it (O_CREAT,
// O_TRUNC, O_DIRECT), write it from one buffer filled once — iolab's piece
// size, in huge pages — and close it. No content is made per frame, no call
// is timed. It is what the directory carries for these frames with iolab's
// calls, the bound beside both tools' fps. It returns frames per second
// and the CPU seconds of the bench's process while the frames were written
// (the bench does nothing else meanwhile).
func runPlain(dir string, c benchCase, frameBytes int64) (fps, cpu float64) {
	piece := int(min(frames.PieceBytes(dir, true), frameBytes))
	bufs := make([][]byte, c.threads) // made before the clock starts, as both tools make theirs
	for t := range bufs {
		buf, release, err := fs.AlignedBuffer(piece)
		if err != nil {
			harness.Fatalf("plain writer: %v", err)
		}
		defer release()
		for i := range buf {
			buf[i] = byte(i*7 + 1)
		}
		bufs[t] = buf
	}
	var next atomic.Int64
	var failure atomic.Pointer[error]
	var wg sync.WaitGroup
	cpu0 := selfCPU()
	start := time.Now()
	for _, buf := range bufs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := plainThread(dir, c.frames, frameBytes, buf, &next); err != nil {
				failure.CompareAndSwap(nil, &err)
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	cpu = selfCPU() - cpu0
	if err := failure.Load(); err != nil {
		harness.Fatalf("plain writer: %v", *err)
	}
	return float64(c.frames) / took.Seconds(), cpu
}

// selfCPU is the CPU seconds the bench's process has used so far.
func selfCPU() float64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		harness.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// plainThread writes frames from buf, taking the next frame number from
// next until all n are taken.
func plainThread(dir string, n int, frameBytes int64, buf []byte, next *atomic.Int64) error {
	for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
		path := filepath.Join(dir, fmt.Sprintf("plain%06d.dpx", i))
		fd, _, err := fs.OpenFile(path, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, true)
		if err != nil {
			return err
		}
		for off := int64(0); off < frameBytes; {
			n, err := unix.Pwrite(fd, buf[:min(int64(len(buf)), frameBytes-off)], off)
			if err != nil {
				unix.Close(fd)
				return fmt.Errorf("write %s: %w", path, err)
			}
			off += int64(n)
		}
		if err := unix.Close(fd); err != nil {
			return fmt.Errorf("close %s: %w", path, err)
		}
	}
	return nil
}
