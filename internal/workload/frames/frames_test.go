package frames

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
)

var tiny = Profile{Name: "tiny", Width: 64, Height: 64, BytesPerPixel: 3}

func TestFrameBytes(t *testing.T) {
	t.Parallel()
	p, err := LookupProfile("8k-24BIT")
	if err != nil {
		t.Fatal(err)
	}
	// 7680 x 4320 x 3 + vframetest's 64 KiB header: the field report's
	// 9,959,833,600 bytes per 100 frames.
	if got := p.FrameBytes(DefaultHeader); got*100 != 9_959_833_600 {
		t.Fatalf("8K-24bit frame is %d bytes", got)
	}
	if got := tiny.FrameBytes(4096); got != 16384 {
		t.Fatalf("64x64x3 frame is %d bytes, want 12288+4096", got)
	}
	if _, err := LookupProfile("9K-24bit"); err == nil {
		t.Fatal("unknown profile accepted")
	}
}

func run(t *testing.T, o Options) *metrics.Result {
	t.Helper()
	f, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := f.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestWriteAndReadBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := run(t, Options{Directory: dir, Profile: tiny, Header: 4096, Frames: 20, Threads: 3, Keep: true})
	w := res.ByOp[metrics.Write]
	if w.Ops != 20 || w.Bytes != 20*16384 || res.ByOp[metrics.Open].Ops != 20 || res.ByOp[metrics.Close].Ops != 20 {
		t.Fatalf("write: %+v", res.ByOp)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "iolab-frame-*"))
	if len(files) != 20 {
		t.Fatalf("%d frame files", len(files))
	}
	st, _ := os.Stat(files[0])
	if st.Size() != 16384 {
		t.Fatalf("frame file of %d bytes", st.Size())
	}
	r := run(t, Options{Directory: t.TempDir(), Profile: tiny, Header: 4096, Frames: 10, Threads: 2, Read: true})
	if r.ByOp[metrics.Read].Ops != 10 || r.ByOp[metrics.Write].Ops != 0 {
		t.Fatalf("read back: %+v", r.ByOp)
	}
}

// A writer slowed on every fifth frame misses those deadlines at 100 fps,
// and with DropLate the frames that could not start in time are dropped.
func TestLateFramesWithSlowedWriter(t *testing.T) {
	t.Parallel()
	slow := func(i int) {
		if i%5 == 0 {
			time.Sleep(40 * time.Millisecond) // four frame periods at 100 fps
		}
	}
	o := Options{Directory: t.TempDir(), Profile: tiny, Frames: 20, Threads: 1, FPS: 100, frameDelay: slow}
	res := run(t, o)
	late := res.Extra["frames_late"]
	if late < 4 || res.Extra["frames_dropped"] != 0 || res.Extra["frames_pass"] != 0 || res.Extra["frames_worst_late_ns"] < 30e6 {
		t.Fatalf("late %v, extra %v", late, res.Extra)
	}
	if res.ByOp[metrics.Write].Ops != 20 {
		t.Fatalf("without --drop-late every frame is written: %d", res.ByOp[metrics.Write].Ops)
	}
	// The per-frame series: one entry per frame, in order, the slowed ones late.
	if len(res.Frames) != 20 {
		t.Fatalf("%d frames in the series", len(res.Frames))
	}
	lateInSeries := 0
	for i, f := range res.Frames {
		if f.Frame != i || f.OpenNs <= 0 || f.IONs <= 0 || f.CloseNs <= 0 {
			t.Fatalf("frame %d: %+v", i, f)
		}
		if f.LateNs > 0 {
			lateInSeries++
		}
	}
	if res.Frames[0].LateNs < 30e6 || float64(lateInSeries) != late {
		t.Fatalf("frame 0 late by %d ns; %d late in the series, %v counted", res.Frames[0].LateNs, lateInSeries, late)
	}

	o.DropLate = true
	res = run(t, o)
	dropped := res.Extra["frames_dropped"]
	if dropped < 3 || res.ByOp[metrics.Write].Ops+int64(dropped) != 20 || res.Extra["frames_pass"] != 0 {
		t.Fatalf("drop-late: dropped %v, written %d, extra %v", dropped, res.ByOp[metrics.Write].Ops, res.Extra)
	}

	o.FailOnLate = true
	if f, _ := New(o); f.Gate(res) == nil {
		t.Fatal("a run with dropped frames passed --fail-on-late")
	}

	fastOpts := Options{Directory: t.TempDir(), Profile: tiny, Frames: 5, Threads: 1, FPS: 5, FailOnLate: true}
	fast := run(t, fastOpts)
	if fast.Extra["frames_late"] != 0 || fast.Extra["frames_pass"] != 1 {
		t.Fatalf("an easy rate failed: %v", fast.Extra)
	}
	if f, _ := New(fastOpts); f.Gate(fast) != nil {
		t.Fatalf("a run that kept its rate failed its gate: %v", f.Gate(fast))
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	bad := []Options{
		{Profile: tiny, Frames: 1, Threads: 1},
		{Directory: "x", Frames: 1, Threads: 1},
		{Directory: "x", Profile: tiny, Frames: -1, Threads: 1},
		{Directory: "x", Profile: tiny, Frames: 1, Threads: 1, DropLate: true},
		{Directory: "x", Profile: tiny, Frames: 1, Threads: 1, Order: "backwards"},
		{Directory: "x", Stream: "/x/s", Profile: tiny, Frames: 1, Threads: 1},
		{Stream: "/x/s", Profile: Profile{Name: "empty"}, Frames: 1, Threads: 1},
	}
	for i, o := range bad {
		if _, err := New(o); err == nil {
			t.Errorf("options %d accepted: %+v", i, o)
		}
	}
}

// vframetest's names mean vframetest's sizes; a name iolab used for another
// size says so; iolab's names vframetest lacks still work; custom sizes
// read as vframetest reads them.
func TestProfileSchemes(t *testing.T) {
	t.Parallel()
	for name, want := range map[string][3]int{"HD-24bit": {1280, 720, 3}, "FULLHD-24bit": {1920, 1080, 3}, "SD-24bit": {720, 480, 3},
		"4K-24bit": {3840, 2160, 3}, "8K-DCI-24bit": {8192, 4320, 3}, "DPX-2K-10bit": {2048, 1556, 4}, "EXR-4K-float": {3840, 2160, 12},
		"UHD-10bit": {3840, 2160, 4}, "2K-10bit": {2048, 1080, 4}, "1920x1080x32": {1920, 1080, 4}} {
		p, err := LookupProfile(name)
		if err != nil || [3]int{p.Width, p.Height, p.BytesPerPixel} != want {
			t.Errorf("%s: %+v %v, want %v", name, p, err, want)
		}
	}
	hd, _ := LookupProfile("HD-24bit")
	if !strings.Contains(hd.Warning, "was 1920x1080 x 3 bytes, now FULLHD-24bit") {
		t.Errorf("HD-24bit warning %q", hd.Warning)
	}
	seen := map[string]bool{}
	for _, p := range Profiles() {
		if seen[strings.ToLower(p.Name)] {
			t.Errorf("%s listed twice", p.Name)
		}
		seen[strings.ToLower(p.Name)] = true
		if p.Scheme == "vframetest" && p.Warning == "" {
			for _, r := range iolabResolutions {
				for _, f := range iolabFormats {
					if r.name+"-"+f.name == p.Name && (r.w != p.Width || r.h != p.Height || f.bpp != p.BytesPerPixel) {
						t.Errorf("%s means two sizes without a warning", p.Name)
					}
				}
			}
		}
	}
	if len(seen) < 60 {
		t.Errorf("%d profiles", len(seen))
	}
	for _, bad := range []string{"1920x1080x12", "0x10x24", "9K-24bit"} {
		if _, err := LookupProfile(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// Reverse and random order: every frame once, played in that order, the
// random permutation the same every run.
func TestOrders(t *testing.T) {
	t.Parallel()
	for _, order := range []string{OrderReverse, OrderRandom} {
		o := Options{Directory: t.TempDir(), Profile: tiny, Frames: 12, Threads: 1, Order: order}
		res := run(t, o)
		var frames []int
		for k, f := range res.Frames {
			if f.Pos != k {
				t.Fatalf("%s: position %d holds %+v", order, k, f)
			}
			frames = append(frames, f.Frame)
		}
		if sorted := slices.Sorted(slices.Values(frames)); !slices.Equal(sorted, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) {
			t.Fatalf("%s: frames %v", order, frames)
		}
		switch order {
		case OrderReverse:
			if frames[0] != 11 || frames[11] != 0 {
				t.Errorf("reverse: %v", frames)
			}
		case OrderRandom:
			again := run(t, o)
			for k := range frames {
				if again.Frames[k].Frame != frames[k] {
					t.Fatalf("random order differs between runs: %v then %+v", frames, again.Frames)
				}
			}
			if slices.IsSorted(frames) {
				t.Errorf("random order is sorted: %v", frames)
			}
		}
	}
}

// Stream mode: one file, every frame at its offset, nothing opened per
// frame; read back from the same file; a file that was there is kept.
func TestStream(t *testing.T) {
	t.Parallel()
	stream := filepath.Join(t.TempDir(), "stream.bin")
	o := Options{Stream: stream, Profile: tiny, Header: 4096, Frames: 8, Threads: 2, Keep: true, Order: OrderReverse}
	res := run(t, o)
	if st, err := os.Stat(stream); err != nil || st.Size() != 8*16384 || res.ByOp[metrics.Write].Ops != 8 || res.ByOp[metrics.Open].Ops != 0 {
		t.Fatalf("stream of 8 frames: %v, %+v", err, res.ByOp)
	}
	o.Read, o.Keep = true, false
	if r := run(t, o); r.ByOp[metrics.Read].Ops != 8 || r.ByOp[metrics.Read].Bytes != 8*16384 {
		t.Fatalf("stream read: %+v", r.ByOp)
	}
	if _, err := os.Stat(stream); err != nil {
		t.Fatalf("the stream file that was there before was removed: %v", err)
	}
}

// --read of a directory that already holds a sequence (other sizes, other
// names): every file read whole, in name order, none removed.
func TestReadExistingSequence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sizes := []int{5000, 12345, 4096, 1}
	for i, n := range sizes {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("shot_%04d.dpx", i)), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, ".DS_Store"), []byte("x"), 0o644)
	for _, direct := range []bool{false, true} {
		res := run(t, Options{Directory: dir, Read: true, Threads: 2, Direct: direct})
		if r := res.ByOp[metrics.Read]; r.Ops != 4 || r.Bytes != 5000+12345+4096+1 || len(res.Frames) != 4 {
			t.Fatalf("direct %v: read %+v", direct, r)
		}
	}
	if files, _ := os.ReadDir(dir); len(files) != 5 {
		t.Fatalf("%d files left of 5", len(files))
	}
	f, _ := New(Options{Directory: dir, Read: true, Threads: 1, Frames: 9})
	if err := f.Prepare(context.Background()); err == nil || !strings.Contains(err.Error(), "holds 4 frame files") {
		t.Errorf("9 frames of 4: %v", err)
	}
}

// With KeepGoing a failed frame is counted and the run goes on; it reports
// its success rate. Without it the first failure ends the run.
func TestKeepGoing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Frames 3 and 7 cannot be created: a directory has their names.
	block := func() {
		for _, i := range []int{3, 7} {
			if err := os.Mkdir(filepath.Join(dir, fmt.Sprintf("iolab-frame-%07d.bin", i)), 0o755); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
		}
	}
	block()
	res := run(t, Options{Directory: dir, Profile: tiny, Frames: 10, Threads: 2, KeepGoing: true})
	if res.Extra["frames_failed"] != 2 || res.Extra["frames_success_pct"] != 80 || res.ByOp[metrics.Write].Ops != 8 || res.Errors != 0 {
		t.Fatalf("keep-going: %v, %d written, %d errors", res.Extra, res.ByOp[metrics.Write].Ops, res.Errors)
	}
	if !slices.ContainsFunc(res.Notes, func(n metrics.Note) bool { return n.Code == "frames-failed" && strings.Contains(n.Message, "2 of 10") }) {
		t.Errorf("notes %v", res.Notes)
	}
	block() // the run removed its frames, the empty directories with them
	f, _ := New(Options{Directory: dir, Profile: tiny, Frames: 10, Threads: 1})
	if err := f.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Run(context.Background(), nil); err == nil {
		t.Fatal("a failed frame did not fail the run without KeepGoing")
	}
}

// Empty frames are their header alone, as vframetest's --profile empty
// writes them (64 KiB by default); with no header, files created and
// closed with nothing in them (vframetest's --empty).
func TestEmptyFrames(t *testing.T) {
	t.Parallel()
	p, _ := LookupProfile("empty")
	for _, header := range []int64{DefaultHeader, 0} {
		dir := t.TempDir()
		res := run(t, Options{Directory: dir, Profile: p, Header: header, Frames: 6, Threads: 2, Keep: true})
		if w := res.ByOp[metrics.Write]; w.Ops != 6 || w.Bytes != 6*header || res.ByOp[metrics.Open].Ops != 6 {
			t.Fatalf("empty, header %d: %+v", header, res.ByOp)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "iolab-frame-*"))
		if st, err := os.Stat(files[0]); err != nil || st.Size() != header {
			t.Fatalf("empty, header %d: a frame file of %v bytes (%v)", header, st, err)
		}
	}
}

// Interrupted while a thread waits for its next frame's time (--fps), the
// run writes no frame after the interruption: at 1 fps, stopped 300 ms in,
// it wrote frame 0 alone — not frame 1 too, at its time, after the stop.
func TestInterruptedWhileWaitingForAFrame(t *testing.T) {
	t.Parallel()
	f, err := New(Options{Directory: t.TempDir(), Profile: tiny, Frames: 5, Threads: 1, FPS: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := f.Run(ctx, nil)
	if res == nil {
		t.Fatalf("no result: %v", err)
	}
	if n := res.ByOp[metrics.Write].Ops; n != 1 {
		t.Fatalf("%d frames written when stopped before frame 1's time; want frame 0 alone", n)
	}
}

// vframetest's split gives each thread a fixed contiguous block of frames
// (frames/threads, one more for the first frames%threads), so a thread
// made slow lengthens the whole run; with next, the other threads take
// the frames it does not get to. The slowest thread's finish over the
// threads' mean says which happened. A vframetest profile gets
// vframetest's split unless told otherwise; iolab's custom sizes get next.
func TestSplits(t *testing.T) {
	t.Parallel()
	slow := func(i int) {
		if i < 10 { // the first thread's block of 42 frames over 4 threads is frames 0-10
			time.Sleep(15 * time.Millisecond)
		}
	}
	threadOf := map[string][]int{}
	spread := map[string]float64{}
	for _, split := range []string{SplitBlock, SplitNext} {
		res := run(t, Options{Directory: t.TempDir(), Profile: tiny, Frames: 42, Threads: 4, Split: split, frameDelay: slow})
		if len(res.Frames) != 42 {
			t.Fatalf("%s: %d frames", split, len(res.Frames))
		}
		for _, f := range res.Frames {
			threadOf[split] = append(threadOf[split], f.Thread)
		}
		spread[split] = res.Extra["frames_thread_spread"]
	}
	// Blocks of 11, 11, 10, 10, each thread's its own.
	var want []int
	for th, n := range []int{11, 11, 10, 10} {
		for range n {
			want = append(want, th)
		}
	}
	if !slices.Equal(threadOf[SplitBlock], want) {
		t.Errorf("block: frames by thread %v, want %v", threadOf[SplitBlock], want)
	}
	slowFrames := map[int]bool{}
	for _, th := range threadOf[SplitNext][:10] {
		slowFrames[th] = true
	}
	if len(slowFrames) < 2 {
		t.Errorf("next: the slowed frames 0-9 all went to thread %v: %v", slowFrames, threadOf[SplitNext])
	}
	// The slow thread: 150 ms against a few for the other three (mean
	// about 40 ms): about 3.7x; next: each within a frame of the others.
	if spread[SplitBlock] < 2 || spread[SplitBlock] <= spread[SplitNext] {
		t.Errorf("slowest thread over the mean: block %.2f, next %.2f", spread[SplitBlock], spread[SplitNext])
	}
	for name, want := range map[string]string{"8K-24bit": SplitBlock, "1920x1080x24": SplitNext} {
		p, err := LookupProfile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := New(Options{Directory: t.TempDir(), Profile: p, Frames: 4, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Params()["split"]; got != want {
			t.Errorf("%s: split %s by default, want %s", name, got, want)
		}
	}
	if _, err := New(Options{Directory: t.TempDir(), Profile: tiny, Frames: 4, Threads: 2, Split: "stripes"}); err == nil || !strings.Contains(err.Error(), "--split \"stripes\"") {
		t.Errorf("--split stripes: %v", err)
	}
}

// The slowest thread over the threads' mean counts the threads that
// played: one with no frame (more threads than frames) is none of the
// run's.
func TestSlowestOverMean(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		finished []int64
		want     float64
	}{
		{[]int64{100, 100}, 1},
		{[]int64{300, 100, 100, 100}, 2},
		{[]int64{100, 100, -1, -1, -1}, 1},
		{[]int64{-1, -1}, 1},
	} {
		if got := slowestOverMean(c.finished); got != c.want {
			t.Errorf("%v: %v, want %v", c.finished, got, c.want)
		}
	}
}

// A profile whose name meant another size in iolab before is said once,
// with the workload's first run, not with every run.
func TestRenamedProfileSaidOnce(t *testing.T) {
	t.Parallel()
	hd, err := LookupProfile("HD-24bit")
	if err != nil || hd.Warning == "" {
		t.Fatalf("HD-24bit: %v %q", err, hd.Warning)
	}
	f, err := New(Options{Directory: t.TempDir(), Profile: hd, Frames: 2, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var said []int
	for i := range 3 {
		res, err := f.Run(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range res.Notes {
			if n.Code == "profile-renamed" {
				said = append(said, i)
			}
		}
	}
	if !slices.Equal(said, []int{0}) {
		t.Errorf("profile-renamed with runs %v, want the first alone", said)
	}
}
