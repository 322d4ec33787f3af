package fs

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/units"
)

// A rate cap is a ceiling: however fast the engine, a job starts no more
// than the operations its schedule has due within its runtime — from the
// one due at the start, none due at or after the end, nor one begun
// before its time when the stop came. Machine load can only lower the
// count, so the floor is loose.
func TestRateCaps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		engine string
		depth  int
		edit   func(*Options)
		dir    metrics.Op
		perSec float64
	}{
		{"rate_iops null", EngineNull, 1, func(o *Options) { o.RateIOPS = [2]int64{400, 400} }, metrics.Read, 400},
		{"rate in bytes, 2 jobs", EngineNull, 1, func(o *Options) { o.Rate, o.NumJobs = [2]int64{800 << 10, 0}, 2 }, metrics.Read, 2 * 200},
		{"writes only, io_uring", EngineIOUring, 8, func(o *Options) { o.RW, o.RateIOPS = RandRW, [2]int64{0, 300} }, metrics.Write, 300},
		{"psync", EnginePsync, 1, func(o *Options) { o.RW, o.RateIOPS = RandWrite, [2]int64{0, 300} }, metrics.Write, 300},
	} {
		o := DefaultOptions()
		o.Size, o.Runtime, o.Engine, o.IODepth, o.RW = 4<<20, 700*time.Millisecond, tc.engine, tc.depth, RandRead
		if tc.engine != EngineNull {
			o.Directory = t.TempDir()
		}
		tc.edit(&o)
		res, err := run(t, o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, ceiling := float64(res.ByOp[tc.dir].Ops), math.Ceil(tc.perSec*o.Runtime.Seconds()-1e-6)
		if got > ceiling || got < ceiling/3 {
			t.Errorf("%s: %v %ss in %v, want at most %.0f (the cap) and not far below", tc.name, got, tc.dir, res.Duration, ceiling)
		}
		// Every paced operation has its response time, from its place on
		// the schedule, at least its service time; an unpaced one none.
		for d, st := range res.ByOp[:2] {
			paced := tc.edit != nil && (metrics.Op(d) == tc.dir)
			switch {
			case paced && (st.Response == nil || st.Response.TotalCount() != st.Ops || st.Response.Max() < st.Lat.Max()/2):
				t.Errorf("%s: %s: %d operations, response times %v", tc.name, metrics.Op(d), st.Ops, st.Response)
			case !paced && st.Ops > 0 && tc.name == "writes only, io_uring" && st.Response != nil:
				t.Errorf("%s: unpaced %ss have response times", tc.name, metrics.Op(d))
			}
		}
		if _, ok := res.Extra["late_starts"]; !ok {
			t.Errorf("%s: no late_starts of a paced run", tc.name)
		}
		if tc.name == "writes only, io_uring" && res.ByOp[metrics.Read].Ops < 10*res.ByOp[metrics.Write].Ops {
			t.Errorf("%s: %d reads beside %d writes: the write cap held reads back", tc.name, res.ByOp[metrics.Read].Ops, res.ByOp[metrics.Write].Ops)
		}
	}
}

// thinktime pauses after every thinktime_blocks operations: the count is
// bounded by the pauses that fit in the run.
func TestThinkTime(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{EngineNull, EngineIOUring, EnginePsync} {
		o := DefaultOptions()
		o.Size, o.Runtime, o.Engine, o.IODepth = 4<<20, 500*time.Millisecond, engine, 4
		o.ThinkTime, o.ThinkTimeBlocks = 20*time.Millisecond, 3
		if engine != EngineNull {
			o.Directory = t.TempDir()
		}
		res, err := run(t, o)
		if err != nil {
			t.Fatal(err)
		}
		pauses := int64(res.Duration/o.ThinkTime) + 1
		if n := res.ByOp[metrics.Read].Ops; n > 3*pauses || n < 3 {
			t.Errorf("%s: %d reads in %v with a 20ms pause every 3, want at most %d", engine, n, res.Duration, 3*pauses)
		}
	}
}

// nrfiles spreads a job over its files round robin; openfiles keeps only so
// many open, each closed when its pass is done: every file is written
// whole, and no descriptor is left behind. Not parallel: it counts the
// process's descriptors, which other tests' files would move.
func TestFilesRoundRobinAndOpenFiles(t *testing.T) {
	for _, tc := range []struct {
		engine    string
		openfiles int
	}{{EnginePsync, 0}, {EnginePsync, 2}, {EngineIOUring, 3}} {
		o := DefaultOptions()
		o.Directory, o.RW, o.NrFiles, o.FileSize, o.OpenFiles = t.TempDir(), Write, 5, 256<<10, tc.openfiles
		o.Engine, o.IODepth, o.NumJobs, o.Verify.Kind = tc.engine, 4, 2, "crc32c"
		fds := openFDs(t)
		res, err := run(t, o)
		if err != nil {
			t.Fatalf("%s openfiles %d: %v", tc.engine, tc.openfiles, err)
		}
		if got := openFDs(t); got > fds {
			t.Errorf("%s openfiles %d: %d descriptors open after the run, %d before", tc.engine, tc.openfiles, got, fds)
		}
		// 2 jobs x 5 files x 64 blocks, each block once, all read back.
		if w := res.ByOp[metrics.Write].Ops; w != 640 || !slices.ContainsFunc(res.Notes, func(n metrics.Note) bool {
			return strings.Contains(n.Message, "all 640 blocks")
		}) {
			t.Errorf("%s openfiles %d: %d writes, notes %v; want 640 blocks written and read back", tc.engine, tc.openfiles, w, res.Notes)
		}
		for j := range 2 {
			for k := range 5 {
				if st, err := os.Stat(filepath.Join(o.Directory, fmt.Sprintf("iolab.%d.%d", j, k))); err != nil || st.Size() != 256<<10 {
					t.Errorf("file %d.%d: %v", j, k, err)
				}
			}
		}
		if w, _ := New(o); w.Params()["nrfiles"] != "5" || w.Params()["filesize"] != "256k" {
			t.Errorf("params %v", w.Params())
		}
	}
}

func openFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	return len(entries)
}

// sync_file_range after every N writes, on both engines, counted as syncs
// and not as I/O.
func TestSyncFileRange(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{EnginePsync, EngineIOUring} {
		o := DefaultOptions()
		o.Directory, o.Size, o.RW, o.Engine, o.IODepth = t.TempDir(), 1<<20, Write, engine, 4
		o.SyncFileRange = SyncRange{Flags: unix.SYNC_FILE_RANGE_WRITE, Every: 8}
		res, err := run(t, o)
		if err != nil {
			t.Fatal(err)
		}
		// 31, as fio's sync_file_range=write:8 makes for 256 writes (strace).
		if w, s := res.ByOp[metrics.Write].Ops, res.ByOp[metrics.Sync].Ops; w != 256 || s != 31 {
			t.Errorf("%s: %d writes and %d syncs, want 256 and 31", engine, w, s)
		}
	}
}

func TestParsePairAndSyncRange(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]int64{"1m": {1 << 20, 1 << 20}, "500k,1m": {500 << 10, 1 << 20}, ",1m": {0, 1 << 20}, "2k,": {2 << 10, 0}} {
		got, err := ParsePair(in, units.ParseSize)
		if err != nil || got != want {
			t.Errorf("ParsePair(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, _ := ParsePair(formatPair(got, units.FormatSize), units.ParseSize); back != got {
			t.Errorf("%q: formatPair does not round-trip: %q", in, formatPair(got, units.FormatSize))
		}
	}
	for _, bad := range []string{",", "1m,2m,3m", "x"} {
		if _, err := ParsePair(bad, units.ParseSize); err == nil {
			t.Errorf("ParsePair(%q) accepted", bad)
		}
	}
	r, err := ParseSyncRange("wait_before,write,wait_after:8")
	if err != nil || r.Every != 8 || r.Flags != unix.SYNC_FILE_RANGE_WAIT_BEFORE|unix.SYNC_FILE_RANGE_WRITE|unix.SYNC_FILE_RANGE_WAIT_AFTER ||
		r.String() != "wait_before,write,wait_after:8" {
		t.Errorf("ParseSyncRange: %+v %v", r, err)
	}
	for _, bad := range []string{"write", "write:0", "flush:4", "write:x"} {
		if _, err := ParseSyncRange(bad); err == nil {
			t.Errorf("ParseSyncRange(%q) accepted", bad)
		}
	}
}

// fsync=N as fio counts it: a sync after every N writes of a job but its
// last (fio syncs before the write that follows), on every engine: 256
// writes at fsync=4 make 63 (strace of fio 3.33: 63), 255 make 63 too.
func TestFsyncCountsAsFios(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{EnginePsync, EngineIOUring} {
		for _, c := range []struct{ size, syncs int64 }{{256 * 4096, 63}, {255 * 4096, 63}, {8 * 4096, 1}} {
			o := DefaultOptions()
			o.Directory, o.RW, o.FileSize, o.BlockSize, o.Engine, o.Fsync = t.TempDir(), Write, c.size, 4096, engine, 4
			res, err := run(t, o)
			if err != nil {
				t.Fatal(err)
			}
			if w, s := res.ByOp[metrics.Write].Ops, res.ByOp[metrics.Sync].Ops; w != c.size/4096 || s != c.syncs {
				t.Errorf("%s, %d writes: %d written, %d syncs; want %d, as fio", engine, c.size/4096, w, s, c.syncs)
			}
		}
	}
}

// number_ios as fio's: a bound on a job's operations, never more than its
// size (or its runtime) gives, on every engine, time-based or not.
func TestNumberIOs(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{EnginePsync, EngineIOUring} {
		for _, c := range []struct {
			n, want int64
			runtime time.Duration
		}{{100, 100, 0}, {1000, 256, 0}, {100, 100, 30 * time.Second}} {
			o := DefaultOptions()
			o.Directory, o.RW, o.FileSize, o.BlockSize, o.Engine, o.NumberIOs, o.Runtime = t.TempDir(), RandWrite, 1<<20, 4096, engine, c.n, c.runtime
			res, err := run(t, o)
			if err != nil {
				t.Fatal(err)
			}
			if w := res.ByOp[metrics.Write].Ops; w != c.want {
				t.Errorf("%s, number_ios %d, runtime %v: %d writes, want %d", engine, c.n, c.runtime, w, c.want)
			}
		}
	}
}

// An openfiles window with fsync on io_uring: a file closes only after the
// sync queued behind its writes, so every sync succeeds and none is lost.
func TestWindowWithSyncs(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Directory, o.RW, o.NrFiles, o.FileSize, o.OpenFiles = t.TempDir(), Write, 6, 64<<10, 2
	o.Engine, o.IODepth, o.Fsync = EngineIOUring, 4, 3
	res, err := run(t, o)
	if err != nil {
		t.Fatal(err)
	}
	// 31 syncs, as fio makes of the same job (none after the last write).
	if w, s := res.ByOp[metrics.Write].Ops, res.ByOp[metrics.Sync].Ops; w != 96 || s != 31 || res.Errors != 0 {
		t.Fatalf("%d writes, %d syncs, %d errors; want 96, 31, 0", w, s, res.Errors)
	}
}

// A rate a job fell short of is said of whoever fell short, by the rule
// the report's who-fell-behind uses: a generator that waited for a CPU
// 800 µs an operation of 200 µs reads kept the rate from itself; a
// generator that kept its time, with reads of 20 ms, was held back by the
// target.
func TestRateNotMetSaysWho(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.RW, o.RateIOPS = RandRead, [2]int64{256, 0}
	f := &FS{opts: o, jobs: make([]*job, 1)}
	result := func(latNs int64, waitS float64) *metrics.Result {
		lat := metrics.NewHistogram()
		metrics.RecordLatencyN(lat, latNs, 200)
		res := &metrics.Result{Duration: time.Second, CPUUserS: 0.05, Extra: map[string]float64{"gen_cpu_wait_s": waitS, "late_starts": 20}}
		res.ByOp[metrics.Read] = metrics.OpStats{Ops: 200, Lat: lat, Response: lat}
		return res
	}
	for _, c := range []struct {
		name string
		res  *metrics.Result
		who  string
	}{
		{"starved", result(200e3, 0.16), "iolab, not the target, fell behind: its own delay was 400% of the median it measured, its threads waited for a CPU 76% of the time"},
		{"slow target", result(20e6, 0.002), "the target did not keep up"},
	} {
		notes := f.paceNotes(c.res, [2]int64{210, 0})
		if len(notes) != 1 || notes[0].Code != "rate-not-met" || !strings.Contains(notes[0].Message, "reads ran at 200/s, below the 256/s") ||
			!strings.Contains(notes[0].Message, c.who) {
			t.Errorf("%s: %+v, want %q", c.name, notes, c.who)
		}
	}
}
