package frames

import (
	"context"
	"os"
	"path/filepath"
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
	// 7680 x 4320 x 3 + 4096, rounded up to 4 KiB: about 100 MB, as the field report says.
	if got := p.FrameBytes(); got != 99536896 {
		t.Fatalf("8K-24bit frame is %d bytes", got)
	}
	if got := tiny.FrameBytes(); got != 16384 {
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
	res := run(t, Options{Directory: dir, Profile: tiny, Frames: 20, Threads: 3, Keep: true})
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
	r := run(t, Options{Directory: t.TempDir(), Profile: tiny, Frames: 10, Threads: 2, Read: true})
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
		{Directory: "x", Profile: tiny, Frames: 0, Threads: 1},
		{Directory: "x", Profile: tiny, Frames: 1, Threads: 1, DropLate: true},
	}
	for i, o := range bad {
		if _, err := New(o); err == nil {
			t.Errorf("options %d accepted: %+v", i, o)
		}
	}
}
