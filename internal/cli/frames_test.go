package cli

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
	if err != nil || !strings.Contains(list, "8K-24bit") || !strings.Contains(list, "99598336") || !strings.Contains(list, "HD-24bit is vframetest's 1280x720") {
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

// vframetest's options through the command line: a stream file in reverse
// order with a header, read back at a frame rate with the per-frame CSV
// (relative and absolute times); an existing sequence read as it is; a
// run that goes on past failed frames reports its success rate.
func TestFramesVframetestOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	stream := filepath.Join(dir, "clip.bin")
	_, stderr, err := iolab(t, context.Background(), "frames", "--stream", stream, "--profile", "64x64x24", "--header", "0",
		"--frames", "6", "--order", "reverse", "--keep", "--rounds=1", "--warmup=0", "--db", db)
	if st, serr := os.Stat(stream); err != nil || serr != nil || st.Size() != 6*12288 {
		t.Fatalf("stream write: %v %v\n%s", err, serr, stderr)
	}
	out, _, err := iolab(t, context.Background(), "frames", "--stream", stream, "--profile", "64x64x24", "--header", "0", "--read",
		"--frames", "6", "--order", "random", "--fps", "500", "--rounds=1", "--warmup=0", "--db", db, "--format", "frames")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 7 {
		t.Fatalf("frames CSV: %v\n%s", err, out)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	seen := map[string]bool{}
	for k, row := range rows[1:] {
		seen[row[col["frame"]]] = true
		start, _ := strconv.ParseInt(row[col["start_ns"]], 10, 64)
		release, _ := strconv.ParseInt(row[col["release_ns"]], 10, 64)
		deadline, _ := strconv.ParseInt(row[col["deadline_ns"]], 10, 64)
		startAbs, _ := strconv.ParseInt(row[col["start_unix_ns"]], 10, 64)
		releaseAbs, _ := strconv.ParseInt(row[col["release_unix_ns"]], 10, 64)
		if row[col["pos"]] != strconv.Itoa(k) || release != int64(k)*2_000_000 || deadline != release+2_000_000 || start < release ||
			startAbs-releaseAbs != start-release || startAbs < 1e18 || row[col["dropped"]] != "false" {
			t.Errorf("row %d: %v", k, row)
		}
	}
	if len(seen) != 6 {
		t.Errorf("frames read: %v", seen)
	}

	// A sequence another tool wrote, read as it is.
	seq := filepath.Join(dir, "seq")
	os.Mkdir(seq, 0o755)
	for i, n := range []int{3000, 9000, 100} {
		os.WriteFile(filepath.Join(seq, fmt.Sprintf("f%03d.exr", i)), make([]byte, n), 0o644)
	}
	out, _, err = iolab(t, context.Background(), "frames", "--directory", seq, "--read", "--rounds=1", "--warmup=0", "--json", "--db", db)
	var r struct {
		Cells []struct{ Params map[string]string }
		Runs  []struct {
			Read *struct{ Ops, Bytes int64 } `json:"read"`
		}
	}
	decodeInto(t, out, &r)
	if err != nil || r.Runs[0].Read == nil || r.Runs[0].Read.Ops != 3 || r.Runs[0].Read.Bytes != 12100 || r.Cells[0].Params["profile"] != "existing" {
		t.Fatalf("existing sequence: %v %+v %+v", err, r.Runs, r.Cells)
	}
	if files, _ := os.ReadDir(seq); len(files) != 3 {
		t.Fatalf("the sequence lost files: %d left", len(files))
	}

	// --keep-going: two frames cannot be written; the run reports 80%.
	blocked := filepath.Join(dir, "blocked")
	os.Mkdir(blocked, 0o755)
	for _, i := range []int{2, 5} {
		os.Mkdir(filepath.Join(blocked, fmt.Sprintf("iolab-frame-%07d.bin", i)), 0o755)
	}
	out, stderr, err = iolab(t, context.Background(), "frames", "--directory", blocked, "--profile", "64x64x24", "--frames", "10",
		"--keep-going", "--rounds=1", "--warmup=0", "--db", db)
	if err != nil || !strings.Contains(out, "2 of 10 frames failed (success rate 80.00%)") {
		t.Fatalf("keep-going: %v\n%s\n%s", err, out, stderr)
	}
}
