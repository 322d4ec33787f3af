// Package frames is the video-frame workload, as frametest runs it: one file
// per frame, written (or read back) by several threads in frame order, each
// frame timed as open, I/O and close. With a target frame rate, frame i may
// start at t0 + i/F and is due at t0 + (i+1)/F: a frame finished later is
// late, and with DropLate a frame not started by its deadline is dropped —
// what a player or a capture card would do. The run passes when no frame was
// late or dropped.
package frames

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
	"github.com/iolab/iolab/internal/workload/fs"
)

// Options is one frame test.
type Options struct {
	Directory string
	Profile   Profile
	Frames    int
	Threads   int
	Direct    bool
	FPS       float64
	DropLate  bool
	// FailOnLate makes a run with a late or dropped frame fail its gate.
	FailOnLate bool
	Read       bool // read the frames back instead of writing them
	Data       datagen.Pattern
	Keep       bool // leave written frames in place

	// frameDelay, set by tests, slows the writer of frame i down.
	frameDelay func(i int)
}

// chunkBytes bounds each thread's buffer: frames are written in pieces.
const chunkBytes = 8 << 20

// Validate checks the options on their own.
func (o *Options) Validate() error {
	switch {
	case o.Directory == "":
		return errors.New("--directory is required")
	case o.Profile.Width < 1 || o.Profile.Height < 1 || o.Profile.BytesPerPixel < 1:
		return errors.New("--profile, or --width, --height and --bytes-per-pixel, are required")
	case o.Frames < 1:
		return fmt.Errorf("--frames %d: want at least 1", o.Frames)
	case o.Threads < 1 || o.Threads > 1024:
		return fmt.Errorf("--threads %d: want 1..1024", o.Threads)
	case o.FPS < 0:
		return fmt.Errorf("--fps: want frames per second > 0")
	case o.DropLate && o.FPS == 0:
		return errors.New("--drop-late needs --fps")
	case o.FailOnLate && o.FPS == 0:
		return errors.New("--fail-on-late needs --fps")
	}
	return o.Data.Validate()
}

// Frames is the workload.
type Frames struct {
	opts  Options
	notes []metrics.Note
}

// New validates opts.
func New(opts Options) (*Frames, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Frames{opts: opts}, nil
}

// Kind implements workload.Workload.
func (f *Frames) Kind() string { return "frames" }

// Params implements workload.Workload.
func (f *Frames) Params() map[string]string {
	o := &f.opts
	p := map[string]string{"profile": o.Profile.Name, "frame_size": units.FormatSize(o.Profile.FrameBytes()),
		"frames": fmt.Sprint(o.Frames), "threads": fmt.Sprint(o.Threads), "direct": fmt.Sprint(boolInt(o.Direct)),
		"mode": "write", "directory": o.Directory}
	if o.Profile.Name == "" {
		p["profile"] = fmt.Sprintf("%dx%dx%d", o.Profile.Width, o.Profile.Height, o.Profile.BytesPerPixel)
	}
	if o.Read {
		p["mode"] = "read"
	}
	if o.FPS > 0 {
		p["fps"] = fmt.Sprint(o.FPS)
	}
	if o.DropLate {
		p["drop_late"] = "1"
	}
	return p
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (f *Frames) path(i int) string {
	return filepath.Join(f.opts.Directory, fmt.Sprintf("iolab-frame-%07d.bin", i))
}

// Prepare checks the directory and, to read frames back, writes them once.
func (f *Frames) Prepare(ctx context.Context) error {
	if err := fs.CheckDirectory(f.opts.Directory); err != nil {
		return &workload.InputError{Err: err}
	}
	var st unix.Statfs_t
	need := f.opts.Profile.FrameBytes() * int64(f.opts.Frames)
	if unix.Statfs(f.opts.Directory, &st) == nil && st.Blocks > 0 && int64(st.Bavail)*st.Bsize < need {
		return &workload.InputError{Err: fmt.Errorf("--directory %s: %d frames need %s but %s is free; lower --frames",
			f.opts.Directory, f.opts.Frames, units.FormatSize(need), units.FormatSize(int64(st.Bavail)*st.Bsize))}
	}
	if !f.opts.Read {
		return nil
	}
	w := *f
	w.opts.Read, w.opts.FPS, w.opts.DropLate, w.opts.Keep = false, 0, false, true
	_, err := w.Run(ctx, nil)
	return err
}

// Gate implements workload.Gater: with FailOnLate, a run with a late or
// dropped frame fails.
func (f *Frames) Gate(res *metrics.Result) error {
	if !f.opts.FailOnLate || res.Extra["frames_pass"] != 0 {
		return nil
	}
	return fmt.Errorf("FAIL: %g fps missed: %.0f frames late (worst by %s), %.0f dropped (--fail-on-late)", f.opts.FPS,
		res.Extra["frames_late"], time.Duration(res.Extra["frames_worst_late_ns"]).Round(time.Microsecond), res.Extra["frames_dropped"])
}

// Close removes read-back frames unless Keep.
func (f *Frames) Close() error {
	if f.opts.Read && !f.opts.Keep {
		f.remove()
	}
	return nil
}

func (f *Frames) remove() {
	for i := 0; i < f.opts.Frames; i++ {
		_ = os.Remove(f.path(i))
	}
}

// Run implements workload.Workload.
func (f *Frames) Run(ctx context.Context, progress func(ops, bytes int64)) (*metrics.Result, error) {
	o := &f.opts
	var next, late, dropped, worstLateNs atomic.Int64
	var fellBack atomic.Bool
	if o.Read && !o.Direct {
		for i := 0; i < o.Frames; i++ { // read from storage, not the page cache
			if fd, err := unix.Open(f.path(i), unix.O_RDONLY, 0); err == nil {
				_ = unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
				unix.Close(fd)
			}
		}
	}
	threads := make([]*thread, o.Threads)
	// Each thread maps and fills its buffer before the clock starts, so
	// frame i is released at i/fps of a clock that every thread shares.
	dopts := driver.Options{Workers: o.Threads, ProcPerWorker: true, Setup: func(worker int) error {
		threads[worker] = &thread{f: f}
		return threads[worker].init(worker)
	}}
	if progress != nil {
		dopts.Progress = func(_ time.Duration, ops, bytes int64) { progress(ops, bytes) }
	}

	period := 0.0
	if o.FPS > 0 {
		period = float64(time.Second) / o.FPS
	}
	res, err := driver.Run(ctx, dopts, func(ctx context.Context, worker int, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) error {
		t := threads[worker]
		t.clock, t.rec = clock, rec
		defer t.free()
		for !stop.Stopped() {
			i := int(next.Add(1) - 1)
			if i >= o.Frames {
				return nil
			}
			if period > 0 {
				release, deadline := int64(float64(i)*period), int64(float64(i+1)*period)
				if d := release - clock.Now(); d > 0 {
					time.Sleep(time.Duration(d))
				}
				if o.DropLate && clock.Now() > deadline {
					dropped.Add(1)
					t.timings = append(t.timings, metrics.FrameTiming{Frame: i, Thread: worker, Dropped: true})
					continue
				}
				if err := t.frame(i); err != nil {
					return err
				}
				if over := clock.Now() - deadline; over > 0 {
					t.timings[len(t.timings)-1].LateNs = over
					late.Add(1)
					for w := worstLateNs.Load(); over > w && !worstLateNs.CompareAndSwap(w, over); w = worstLateNs.Load() {
					}
				}
				continue
			}
			if err := t.frame(i); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, driver.ErrGraceExceeded) {
		return nil, err // workers still use their buffers
	}
	for _, t := range threads {
		if t != nil {
			t.free() // a thread set up for a run that never started
			fellBack.Store(fellBack.Load() || t.fellBack)
		}
	}
	if res == nil {
		return nil, err
	}
	for _, t := range threads {
		if t != nil {
			res.Frames = append(res.Frames, t.timings...)
		}
	}
	sort.Slice(res.Frames, func(a, b int) bool { return res.Frames[a].Frame < res.Frames[b].Frame })
	frames := res.ByOp[metrics.Write].Ops + res.ByOp[metrics.Read].Ops
	res.Extra = map[string]float64{"frames_done": float64(frames), "frames_fps": float64(frames) / math.Max(res.Duration.Seconds(), 1e-9),
		"frames_late": float64(late.Load()), "frames_dropped": float64(dropped.Load()), "frames_worst_late_ns": float64(worstLateNs.Load())}
	if o.FPS > 0 {
		res.Extra["frames_target_fps"] = o.FPS
		res.Extra["frames_pass"] = 0
		if late.Load() == 0 && dropped.Load() == 0 {
			res.Extra["frames_pass"] = 1
		}
	}
	if fellBack.Load() {
		res.Notes = append(res.Notes, metrics.Note{Code: "o-direct-fallback",
			Message: o.Directory + " refuses O_DIRECT; --direct ran as buffered I/O, so the page cache is in every number"})
	}
	if !o.Read && !o.Keep {
		f.remove()
	}
	return res, err
}
