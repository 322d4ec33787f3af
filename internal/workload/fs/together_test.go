package fs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/iolab/iolab/internal/metrics"
)

// Jobs together (a job file's sections with no stonewall) run at the same
// time — each its own process, both alive at once — and the run is both
// jobs': their operations add up, and each job's are kept as job.N.*. Not
// parallel: it counts this test binary's job processes.
func TestTogetherRunsJobsAtOnce(t *testing.T) {
	dir := t.TempDir()
	reader, writer := DefaultOptions(), DefaultOptions()
	reader.Directory, reader.Size, reader.IOSize, reader.RW, reader.Engine = dir, 600<<10, 600<<10, RandRead, EnginePsync
	reader.RateIOPS, reader.FilePrefix = [2]int64{100, 0}, "reader"
	writer.Directory, writer.Size, writer.IOSize, writer.RW, writer.Engine = dir, 300<<10, 300<<10, Write, EnginePsync
	writer.RateIOPS, writer.FilePrefix = [2]int64{0, 50}, "writer"
	w := NewTogether([]*FS{prepared(t, reader), prepared(t, writer)}, []string{"reader", "writer"})
	most := 0
	res, err := w.Run(context.Background(), func(int64, int64) { most = max(most, len(jobProcesses(t))) })
	if err != nil {
		t.Fatal(err)
	}
	if most != 2 {
		t.Errorf("at most %d job processes at once, want both jobs' 2", most)
	}
	if r, wr := res.ByOp[metrics.Read].Ops, res.ByOp[metrics.Write].Ops; r != 150 || wr != 75 {
		t.Errorf("%d reads, %d writes; want the reader's 150 and the writer's 75", r, wr)
	}
	if x := res.Extra; x["job.1.ops"] != 150 || x["job.2.ops"] != 75 || x["job.2.ops_per_s"] <= 0 || x["job.1.lat_p99_ns"] <= 0 {
		t.Errorf("each job's figures: %v", x)
	}
	for _, name := range []string{"reader.0.0", "writer.0.0"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("each job its own file, named as fio names it: %v", err)
		}
	}
	if p := w.Params(); p["jobs"] != "reader,writer" || p["ioengine"] != "psync" || p["rw"] != "" {
		t.Errorf("params %v: want the jobs named, what they share, not what they do not", p)
	}
}
