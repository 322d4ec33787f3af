package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestFramesContract(t *testing.T) {
	t.Parallel()
	out, _, err := iolab(t, context.Background(), "frames", "--directory", t.TempDir(), "--profile", "HD-24bit", "--frames", "10",
		"--threads", "2", "--fps", "200", "--rounds=1", "--warmup=0", "--json", "--db", filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Runs []struct {
			Frames *struct {
				FPS           float64 `json:"fps"`
				Late, Dropped int64
				Pass          *bool                         `json:"pass"`
				FrameNs       struct{ P50, P99, Max int64 } `json:"frame_ns"`
			} `json:"frames"`
			Write *struct{ Ops, Bytes int64 } `json:"write"`
		} `json:"runs"`
	}
	decodeInto(t, out, &r)
	f := r.Runs[0].Frames
	if f == nil || f.FPS <= 0 || f.Pass == nil || f.FrameNs.P50 <= 0 || f.FrameNs.Max < f.FrameNs.P99 ||
		r.Runs[0].Write.Ops+f.Dropped != 10 || *f.Pass != (f.Late == 0 && f.Dropped == 0) {
		t.Fatalf("frames %+v write %+v", f, r.Runs[0].Write)
	}
	// The per-frame series is stored and shown with --series.
	db := filepath.Join(t.TempDir(), "y.db")
	if _, _, err := iolab(t, context.Background(), "frames", "--directory", t.TempDir(), "--width", "32", "--height", "32",
		"--bytes-per-pixel", "4", "--frames", "6", "--rounds=1", "--warmup=0", "--db", db); err != nil {
		t.Fatal(err)
	}
	shown, _, err := iolab(t, context.Background(), "show", "--db", db, "--json", "--series")
	var s struct {
		Runs []struct {
			FrameSeries []struct {
				Frame int
				IONs  int64 `json:"io_ns"`
			} `json:"frame_series"`
		} `json:"runs"`
	}
	decodeInto(t, shown, &s)
	if err != nil || len(s.Runs) != 1 || len(s.Runs[0].FrameSeries) != 6 || s.Runs[0].FrameSeries[5].Frame != 5 || s.Runs[0].FrameSeries[5].IONs <= 0 {
		t.Fatalf("stored frame series (%v): %+v", err, s.Runs)
	}
	list, _, err := iolab(t, context.Background(), "frames", "--list")
	if err != nil || !strings.Contains(list, "8K-24bit") || !strings.Contains(list, "99536896") {
		t.Fatalf("--list (%v):\n%s", err, list)
	}
	for _, bad := range [][]string{{"--profile", "9K-24bit"}, {"--profile", "HD-24bit", "--width", "10"}, {"--profile", "HD-24bit", "--pattern", "stripes"}} {
		_, _, err := iolab(t, context.Background(), append([]string{"frames", "--directory", t.TempDir()}, bad...)...)
		if err == nil || ExitCode(err) != 2 {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// A frame rate no storage can keep: the text report says FAIL, and with
// --fail-on-late the command exits 1 while the runs are stored as good
// measurements.
func TestFramesFailOnLate(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "x.db")
	args := []string{"frames", "--directory", t.TempDir(), "--profile", "HD-24bit", "--frames", "8", "--threads", "2",
		"--fps", "100000", "--rounds=2", "--warmup=0", "--db", db}
	out, _, err := iolab(t, context.Background(), args...)
	if err != nil || !strings.Contains(out, "FAIL: 100000 fps missed in 2 of 2 runs") {
		t.Fatalf("without --fail-on-late: %v\n%s", err, out)
	}
	out, _, err = iolab(t, context.Background(), append(args, "--fail-on-late")...)
	if err == nil || ExitCode(err) != 1 || !strings.Contains(err.Error(), "2 runs failed their gate") ||
		!strings.Contains(err.Error(), "FAIL: 100000 fps missed") {
		t.Fatalf("with --fail-on-late: %v (exit %d)", err, ExitCode(err))
	}
	if !strings.Contains(out, "2 measured runs") {
		t.Fatalf("the runs that missed the rate are not stored as measured:\n%s", out)
	}
	if _, _, err := iolab(t, context.Background(), "frames", "--directory", t.TempDir(), "--profile", "HD-24bit", "--fail-on-late", "--db", db); err == nil || ExitCode(err) != 2 {
		t.Fatalf("--fail-on-late without --fps: %v", err)
	}
}
