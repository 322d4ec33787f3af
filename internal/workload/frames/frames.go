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
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/datagen"
	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/segment"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
	"github.com/iolab/iolab/internal/workload/fs"
)

// Options is one frame test.
type Options struct {
	Directory string
	Profile   Profile
	// Header is the bytes before each frame's pixels (vframetest's
	// --header; the flag's default is DefaultHeader).
	Header int64
	// Frames per run; 0 with an existing sequence reads every frame.
	Frames  int
	Threads int
	Direct  bool
	FPS     float64
	// Order is the order frames are handled and played: sequential,
	// reverse or random (a permutation fixed by the frame count, the same
	// every run).
	Order string
	// Split is how frames are shared among the threads: SplitBlock
	// (vframetest's: each thread a fixed contiguous block, and with --fps
	// its share of the rate; the run lasts as long as its slowest thread)
	// or SplitNext (each thread takes the next frame not yet taken: a
	// slow thread takes fewer). "" is SplitBlock for a profile of
	// vframetest's, so that its fps is vframetest's, else SplitNext.
	Split    string
	DropLate bool
	// FailOnLate makes a run with a late or dropped frame fail its gate.
	FailOnLate bool
	Read       bool // read the frames back instead of writing them
	// Stream puts every frame in this one file at its offset (frame i at
	// i x frame bytes), created if missing, instead of a file per frame.
	Stream string
	// KeepGoing counts a frame that fails and goes on with the others; the
	// run reports its success rate.
	KeepGoing bool
	Data      datagen.Pattern
	Keep      bool // leave written frames in place

	// Segment is the share of the load this process runs: its part of the
	// threads, and every N-th position of the play order from its own, on
	// the whole's schedule (position k is due at k/FPS in every segment),
	// so N hosts together play one sequence.
	Segment segment.Segment

	// frameDelay, set by tests, slows the writer of frame i down.
	frameDelay func(i int)
}

// Splits of the frames among threads.
const (
	SplitBlock = "block"
	SplitNext  = "next"
)

// plays returns the positions (in play order) worker of threads plays,
// one a call, false once it has none left: with SplitNext, the next
// position of this segment no thread has taken (next counts them); with
// SplitBlock, the worker's contiguous block of the segment's positions —
// frames/threads each, one more for each of the first frames%threads
// threads, as vframetest divides them.
func (f *Frames) plays(worker, threads int, next *atomic.Int64) func() (int, bool) {
	o := &f.opts
	seg := o.Segment
	stride := max(seg.N, 1)
	if o.Split != SplitBlock {
		return func() (int, bool) {
			k := int(next.Add(1)-1)*stride + seg.I
			return k, k < o.Frames
		}
	}
	owned := (o.Frames - seg.I + stride - 1) / stride // this segment's positions
	per, extra := owned/threads, owned%threads
	j := worker*per + min(worker, extra)
	end := j + per
	if worker < extra {
		end++
	}
	return func() (int, bool) {
		if j >= end {
			return 0, false
		}
		j++
		return (j-1)*stride + seg.I, true
	}
}

// slowestOverMean is how much longer the slowest thread took than the
// threads' mean (1: all alike): what a split into fixed blocks loses to
// its slowest thread, and the mechanism of spreads between runs of it.
// A thread that had no frame to play (-1: more threads than frames) is
// no thread of the run's.
func slowestOverMean(finished []int64) float64 {
	var sum, most, n int64
	for _, t := range finished {
		if t >= 0 {
			sum, most, n = sum+t, max(most, t), n+1
		}
	}
	if sum <= 0 {
		return 1
	}
	return float64(most) * float64(n) / float64(sum)
}

// Frame orders.
const (
	OrderSequential = "sequential"
	OrderReverse    = "reverse"
	OrderRandom     = "random"
)

// PieceBytes is the most a thread writes or reads in one call — the size
// of its buffer — for frames in dir. Where the kernel copies from the
// buffer (buffered I/O, and tmpfs, which takes O_DIRECT and copies all
// the same) the piece fits a core's L2 cache on the machines iolab is
// measured on, so the copy reads it from cache: 8 MiB pieces (16
// threads' worth: 128 MiB) were read back from memory, and 8K frames on
// tmpfs went from 0.89x vframetest's fps to 1.03x with 2 MiB. Where the
// device reads the buffer itself (O_DIRECT on a disk's filesystem) fewer,
// larger calls cost less: 2 MiB pieces took 1.9x vframetest's CPU per
// frame on disk, 8 MiB 1.2x (bench/frames_vs_vframetest) — both in 4 KiB
// pages; in huge pages (fs.AlignedBuffer) 8 MiB took 0.3x.
func PieceBytes(dir string, direct bool) int64 {
	var st unix.Statfs_t
	if direct && unix.Statfs(dir, &st) == nil && st.Type != unix.TMPFS_MAGIC && st.Type != unix.RAMFS_MAGIC {
		return 8 << 20
	}
	return 2 << 20
}

// existing says the run reads a sequence already in the directory, whose
// files give the frames and their sizes.
func (o *Options) existing() bool {
	return o.Read && o.Stream == "" && o.Profile == (Profile{})
}

// Validate checks the options on their own.
func (o *Options) Validate() error {
	switch {
	case o.Directory == "" && o.Stream == "":
		return errors.New("--directory (or --stream FILE) is required")
	case o.Directory != "" && o.Stream != "":
		return errors.New("--directory and --stream: give one")
	case !o.existing() && !o.Profile.empty() && (o.Profile.Width < 1 || o.Profile.Height < 1 || o.Profile.BytesPerPixel < 1):
		return errors.New("--profile, or --width, --height and --bytes-per-pixel, are required (with --read and neither, the directory's files are read as they are)")
	case o.Frames < 0 || o.Frames > MaxFrames:
		return fmt.Errorf("--frames %d: want 1..%d", o.Frames, MaxFrames)
	case o.Threads < 1 || o.Threads > 1024:
		return fmt.Errorf("--threads %d: want 1..1024", o.Threads)
	case starved(o.Segment, o.Threads):
		return o.Segment.Starve("--threads", o.Threads, "no thread", true)
	case o.Segment.Split() && o.Stream != "":
		return fmt.Errorf("--stream with --segment %s: the segments would share one file; give each host --directory (or a stream of its own without --segment)", o.Segment)
	case o.Segment.Split() && o.Frames > 0 && o.Frames < o.Segment.N:
		return o.Segment.Starve("--frames", o.Frames, "no frame", false)
	case o.FPS < 0:
		return fmt.Errorf("--fps: want frames per second > 0")
	case o.DropLate && o.FPS == 0:
		return errors.New("--drop-late needs --fps")
	case o.FailOnLate && o.FPS == 0:
		return errors.New("--fail-on-late needs --fps")
	case o.Order != "" && o.Order != OrderSequential && o.Order != OrderReverse && o.Order != OrderRandom:
		return fmt.Errorf("--order %q: want sequential, reverse or random", o.Order)
	case o.Split != "" && o.Split != SplitBlock && o.Split != SplitNext:
		return fmt.Errorf("--split %q: want block (vframetest's: each thread a contiguous block of frames) or next (each thread the next frame not taken)", o.Split)
	case o.Header < 0 || o.Header > 1<<30:
		return fmt.Errorf("--header: want 0..1g bytes")
	}
	if err := flagval.CheckPeriod("--fps", o.FPS, 0, int64(max(o.Frames, 1))); err != nil {
		return err
	}
	switch {
	case o.Stream != "" && o.Profile.empty():
		return errors.New("--stream with the empty profile: a stream of empty frames is no I/O at all")
	}
	return o.Data.Validate()
}

// MaxFrames bounds a run's frames: the per-frame series holds one entry
// each.
const MaxFrames = 1_000_000

// Frames is the workload.
type Frames struct {
	opts       Options
	frameBytes int64
	files      []seqFile // an existing sequence's frames, in name order
	order      []int32   // position -> frame, for reverse and random order
	created    bool      // Prepare created the stream file
	notes      []metrics.Note
}

// seqFile is one frame of an existing sequence.
type seqFile struct {
	path string
	size int64
}

// New validates opts.
func New(opts Options) (*Frames, error) {
	if opts.Order == "" {
		opts.Order = OrderSequential
	}
	if opts.Split == "" {
		opts.Split = SplitNext
		if opts.Profile.Scheme == "vframetest" {
			opts.Split = SplitBlock // its figure is then vframetest's
		}
	}
	if opts.Frames == 0 && !opts.existing() {
		opts.Frames = 100
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	f := &Frames{opts: opts, frameBytes: opts.Profile.FrameBytes(opts.Header)}
	if w := opts.Profile.Warning; w != "" {
		f.notes = append(f.notes, metrics.Note{Code: "profile-renamed", Message: w})
	}
	return f, nil
}

// Kind implements workload.Workload.
func (f *Frames) Kind() string { return "frames" }

// Params implements workload.Workload.
func (f *Frames) Params() map[string]string {
	o := &f.opts
	p := map[string]string{"profile": o.Profile.Name, "frame_size": units.FormatSize(f.frameBytes), "header": units.FormatSize(o.Header),
		"frames": fmt.Sprint(o.Frames), "threads": fmt.Sprint(o.Threads), "direct": fmt.Sprint(boolInt(o.Direct)),
		"mode": "write", "order": o.Order, "split": o.Split}
	if o.Segment.Split() {
		p["segments"] = fmt.Sprint(o.Segment.N)
	}
	switch {
	case o.existing():
		p["profile"], p["frame_size"], p["header"] = "existing", "from the files", "from the files"
	case o.Profile.Name == "":
		p["profile"] = fmt.Sprintf("%dx%dx%d", o.Profile.Width, o.Profile.Height, o.Profile.BytesPerPixel)
	}
	if o.Directory != "" {
		p["directory"] = o.Directory
	} else {
		p["stream"] = o.Stream
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

// path is frame i's file (the stream file in stream mode).
func (f *Frames) path(i int) string {
	switch {
	case f.opts.Stream != "":
		return f.opts.Stream
	case f.files != nil:
		return f.files[i].path
	}
	return filepath.Join(f.opts.Directory, fmt.Sprintf("iolab-frame-%07d.bin", i))
}

// size is frame i's bytes.
func (f *Frames) size(i int) int64 {
	if f.files != nil {
		return f.files[i].size
	}
	return f.frameBytes
}

// target is where the frames go: the directory, or the stream file's.
func (f *Frames) target() string {
	if f.opts.Stream != "" {
		return filepath.Dir(f.opts.Stream)
	}
	return f.opts.Directory
}

// Prepare checks the directory and, to read frames back, writes them once.
func (f *Frames) Prepare(ctx context.Context) error {
	o := &f.opts
	if o.existing() {
		if err := f.readSequence(); err != nil {
			return &workload.InputError{Err: err}
		}
	} else if err := fs.CheckDirectory(f.target()); err != nil {
		if o.Stream != "" {
			err = fmt.Errorf("--stream %s: %w", o.Stream, err)
		}
		return &workload.InputError{Err: err}
	}
	f.order = playOrder(o.Order, o.Frames)
	if o.existing() {
		return nil
	}
	var st unix.Statfs_t
	need := f.frameBytes * int64(o.Frames)
	if unix.Statfs(f.target(), &st) == nil && st.Blocks > 0 && int64(st.Bavail)*st.Bsize < need {
		return &workload.InputError{Err: fmt.Errorf("%s: %d frames need %s but %s is free; lower --frames",
			f.target(), o.Frames, units.FormatSize(need), units.FormatSize(int64(st.Bavail)*st.Bsize))}
	}
	if o.Stream != "" {
		if err := f.createStream(); err != nil {
			return &workload.InputError{Err: err}
		}
	}
	if !o.Read {
		return nil
	}
	if o.Stream != "" {
		if st, err := os.Stat(o.Stream); err == nil && st.Size() >= need {
			return nil // a stream long enough is read as it is
		}
	}
	w := *f
	w.opts.Read, w.opts.FPS, w.opts.DropLate, w.opts.Keep, w.opts.KeepGoing = false, 0, false, true, false
	if !o.Segment.Split() { // written in name order; a segment writes the frames it will play
		w.opts.Order, w.order = OrderSequential, nil
	}
	_, err := w.Run(ctx, nil)
	return err
}

// createStream creates the stream file if it is missing; an existing file
// (or a device) is written over in place, never truncated.
func (f *Frames) createStream() error {
	fd, err := unix.Open(f.opts.Stream, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	switch {
	case err == nil:
		f.created = true
		return unix.Close(fd)
	case errors.Is(err, unix.EEXIST):
		return nil
	}
	return fmt.Errorf("--stream %s: %w", f.opts.Stream, err)
}

// readSequence lists the directory's regular files in name order as the
// frames to read (hidden files left out); their sizes are the frames'.
func (f *Frames) readSequence() error {
	o := &f.opts
	entries, err := os.ReadDir(o.Directory)
	if err != nil {
		return fmt.Errorf("--directory %s: %w", o.Directory, err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return fmt.Errorf("--directory %s: %w", o.Directory, err)
		}
		f.files = append(f.files, seqFile{filepath.Join(o.Directory, e.Name()), info.Size()})
	}
	switch {
	case len(f.files) == 0:
		return fmt.Errorf("--read --directory %s: no frame files to read; give --profile to write a sequence and read it back", o.Directory)
	case o.Frames > len(f.files):
		return fmt.Errorf("--frames %d: %s holds %d frame files", o.Frames, o.Directory, len(f.files))
	case o.Frames == 0:
		o.Frames = len(f.files)
	}
	f.files = f.files[:o.Frames]
	return nil
}

// playOrder is the frame at each position: nil for sequential order.
func playOrder(order string, n int) []int32 {
	if order == OrderSequential {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
		if order == OrderReverse {
			out[i] = int32(n - 1 - i)
		}
	}
	if order == OrderRandom {
		rng := rand.New(rand.NewPCG(uint64(n), 0xf4a3e5))
		rng.Shuffle(n, func(a, b int) { out[a], out[b] = out[b], out[a] })
	}
	return out
}

// frameAt is the frame played at position k.
func (f *Frames) frameAt(k int) int {
	if f.order == nil {
		return k
	}
	return int(f.order[k])
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

// remove deletes the frames iolab wrote: never an existing sequence, nor a
// stream file it did not create.
func (f *Frames) remove() {
	switch {
	case f.files != nil:
	case f.opts.Stream != "":
		if f.created {
			_ = os.Remove(f.opts.Stream)
			f.created = false
		}
	default:
		f.own(func(i int) { _ = os.Remove(f.path(i)) })
	}
}

// own calls do with every frame this segment plays (all of them, unsplit):
// what it writes, reads, and removes — never another segment's.
func (f *Frames) own(do func(i int)) {
	seg := f.opts.Segment
	for k := seg.I; k < f.opts.Frames; k += max(seg.N, 1) {
		do(f.frameAt(k))
	}
}

// Run implements workload.Workload.
func (f *Frames) Run(ctx context.Context, progress func(ops, bytes int64)) (*metrics.Result, error) {
	o := &f.opts
	if o.Stream != "" && !o.Read {
		if err := f.createStream(); err != nil {
			return nil, err
		}
	}
	if o.Read && !o.Direct {
		f.dropCache()
	}
	seg := o.Segment
	p := &play{f: f, stride: max(seg.N, 1), threads: make([]*thread, seg.Share(o.Threads))}
	if o.FPS > 0 {
		p.period = float64(time.Second) / o.FPS
	}
	// When each thread ended, on the run's clock; -1 for one that had
	// no frame to play.
	p.finished = make([]int64, len(p.threads))
	// Each thread maps and fills its buffer before the clock starts, so
	// frame i is released at i/fps of a clock that every thread shares.
	dopts := driver.Options{Workers: len(p.threads), ProcPerWorker: true, Setup: func(worker int) error {
		p.threads[worker] = &thread{f: f}
		return p.threads[worker].init(worker)
	}}
	if progress != nil {
		dopts.Progress = func(_ time.Duration, ops, bytes int64) { progress(ops, bytes) }
	}
	res, err := driver.Run(ctx, dopts, p.worker)
	if errors.Is(err, driver.ErrGraceExceeded) {
		return nil, err // workers still use their buffers
	}
	fellBack := false
	for _, t := range p.threads {
		if t != nil {
			t.free() // a thread set up for a run that never started
			fellBack = fellBack || t.fellBack
		}
	}
	if res == nil {
		return nil, err
	}
	p.figures(res)
	res.Notes = append(res.Notes, f.notes...)
	f.notes = nil // said of the workload once, with its first run, not of every run
	if fellBack {
		res.Notes = append(res.Notes, metrics.Note{Code: "o-direct-fallback",
			Message: f.target() + " refuses O_DIRECT; --direct ran as buffered I/O, so the page cache is in every number"})
	}
	if !o.Read && !o.Keep {
		f.remove()
	}
	return res, err
}

// play is one run of the frames: its threads, its clock's period per
// frame (0: as fast as they go), and what its threads count together.
type play struct {
	f                                        *Frames
	threads                                  []*thread
	period                                   float64
	stride                                   int // the segments the frames are shared among
	next, late, dropped, worstLateNs, failed atomic.Int64
	firstFailure                             atomic.Pointer[string]
	finished                                 []int64
}

// worker is one thread playing its frames.
func (p *play) worker(ctx context.Context, worker int, clock metrics.Clock, stop *driver.Stop, rec *metrics.Recorder) error {
	o := &p.f.opts
	t := p.threads[worker]
	t.clock, t.rec = clock, rec
	defer t.free()
	n := 0 // positions taken
	defer func() {
		p.finished[worker] = clock.Now()
		if n == 0 {
			p.finished[worker] = -1
		}
	}()
	plays := p.f.plays(worker, len(p.threads), &p.next)
	for ; !stop.Stopped(); n++ {
		k, ok := plays()
		if !ok {
			return nil
		}
		i := p.f.frameAt(k)
		var deadline int64
		if p.period > 0 {
			// A shared play clock: position k is due at (k+1)/fps. In
			// blocks, each thread plays its own at its share of the
			// rate, as vframetest's threads do: its n-th frame is due at
			// (n+1) x threads/fps.
			at, every := float64(k), p.period
			if o.Split == SplitBlock {
				at, every = float64(n), p.period*float64(p.stride*len(p.threads))
			}
			release := int64(at * every)
			deadline = int64((at + 1) * every)
			if !driver.SleepUntil(clock, release, stop) { // interrupted while it waited for its frame's time
				return nil
			}
			if o.DropLate && clock.Now() > deadline {
				p.dropped.Add(1)
				t.timings = append(t.timings, metrics.FrameTiming{Frame: i, Pos: k, Thread: worker, Dropped: true})
				continue
			}
		}
		if err := t.frame(i, k); err != nil {
			if !o.KeepGoing {
				return err
			}
			if p.failed.Add(1) == 1 {
				msg := err.Error()
				p.firstFailure.Store(&msg)
			}
			continue
		}
		if p.period > 0 {
			if over := clock.Now() - deadline; over > 0 {
				t.timings[len(t.timings)-1].LateNs = over
				p.late.Add(1)
				for w := p.worstLateNs.Load(); over > w && !p.worstLateNs.CompareAndSwap(w, over); w = p.worstLateNs.Load() {
				}
			}
		}
	}
	return nil
}

// figures adds the frames' timings and figures to the run's result.
func (p *play) figures(res *metrics.Result) {
	o := &p.f.opts
	for _, t := range p.threads {
		if t != nil {
			res.Frames = append(res.Frames, t.timings...)
		}
	}
	sort.Slice(res.Frames, func(a, b int) bool { return res.Frames[a].Pos < res.Frames[b].Pos })
	frames := res.ByOp[metrics.Write].Ops + res.ByOp[metrics.Read].Ops
	late, dropped, failed := p.late.Load(), p.dropped.Load(), p.failed.Load()
	res.Extra = metrics.WithExtra(res.Extra, map[string]float64{
		"frames_done":          float64(frames),
		"frames_fps":           float64(frames) / math.Max(res.Duration.Seconds(), 1e-9),
		"frames_thread_spread": slowestOverMean(p.finished),
		"frames_late":          float64(late),
		"frames_dropped":       float64(dropped),
		"frames_worst_late_ns": float64(p.worstLateNs.Load()),
	})
	if o.KeepGoing {
		tried := frames + failed
		res.Extra["frames_failed"] = float64(failed)
		res.Extra["frames_success_pct"] = 100 * float64(frames) / math.Max(float64(tried), 1)
		if failed > 0 {
			res.Notes = append(res.Notes, metrics.Note{Code: "frames-failed", Message: fmt.Sprintf(
				"%d of %d frames failed (success rate %.2f%%); --keep-going went on; the first: %s", failed, tried, res.Extra["frames_success_pct"], *p.firstFailure.Load())})
		}
	}
	if o.FPS > 0 {
		res.Extra["frames_target_fps"] = o.FPS
		res.Extra["frames_pass"] = 0
		if late == 0 && dropped == 0 && failed == 0 {
			res.Extra["frames_pass"] = 1
		}
	}
}

// dropCache drops the frames' page cache, so a read measures storage.
func (f *Frames) dropCache() {
	drop := func(i int) {
		if fd, err := unix.Open(f.path(i), unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
			_ = unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
			unix.Close(fd)
		}
	}
	if f.opts.Stream != "" {
		drop(0) // the one file
		return
	}
	f.own(drop)
}

func starved(seg segment.Segment, total int) bool {
	_, ok := seg.Starved(total)
	return ok
}
