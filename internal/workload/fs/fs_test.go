package fs

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
)

func valid() Options {
	o := DefaultOptions()
	o.Directory, o.Size = "/tmp", 1<<20
	return o
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*Options)
		want string // "" for valid
	}{
		{"defaults", func(*Options) {}, ""},
		{"no target", func(o *Options) { o.Directory = "" }, "--filename or --directory"},
		{"both targets", func(o *Options) { o.Filename = "/x" }, "not both"},
		{"zero bs", func(o *Options) { o.BlockSize = 0 }, "--bs"},
		{"direct needs 512 multiple", func(o *Options) { o.Direct, o.BlockSize = true, 1000 }, "multiple of 512"},
		{"size below a block", func(o *Options) { o.Size = 100 }, "--size"},
		{"iodepth", func(o *Options) { o.IODepth = 0 }, "--iodepth"},
		{"numjobs", func(o *Options) { o.NumJobs = 0 }, "--numjobs"},
		{"rwmixread", func(o *Options) { o.RWMixRead = 101 }, "--rwmixread"},
		{"engine", func(o *Options) { o.Engine = "windowsaio" }, "--ioengine"},
		{"fio's engine", func(o *Options) { o.Engine = "libaio" }, ""},
		{"rw", func(o *Options) { o.RW = "up" }, "--rw"},
		{"compress", func(o *Options) { o.Data.CompressPct = 120 }, "buffer_compress_percentage"},
		{"fsync", func(o *Options) { o.Fsync = -1 }, "--fsync"},
		{"nrfiles with filename", func(o *Options) { o.Directory, o.Filename, o.NrFiles = "", "/x", 2 }, "--nrfiles 2 with --filename"},
		{"openfiles above nrfiles", func(o *Options) { o.NrFiles, o.OpenFiles = 2, 3 }, "--openfiles 3"},
		{"openfiles with psync-pool", func(o *Options) { o.NrFiles, o.OpenFiles, o.Engine, o.IODepth = 4, 2, EnginePsyncPool, 4 }, "one issuer per job"},
		{"filesize below a block", func(o *Options) { o.FileSize = 100 }, "--filesize"},
		{"rate and rate_iops", func(o *Options) { o.Rate, o.RateIOPS = [2]int64{1 << 20, 0}, [2]int64{100, 0} }, "give one"},
		{"thinktime_blocks", func(o *Options) { o.ThinkTimeBlocks = 0 }, "--thinktime_blocks"},
		{"fsync and sync_file_range", func(o *Options) { o.Fsync, o.SyncFileRange.Every = 1, 4 }, "give one"},
		{"fsync and fdatasync", func(o *Options) { o.Fsync, o.Fdatasync = 1, 4 }, "give one"},
		{"verify kind", func(o *Options) { o.Verify.Kind = "meta" }, "--verify \"meta\": want one of crc32, crc32c"},
		{"verify alias", func(o *Options) { o.Verify.Kind = "crc32c-intel" }, ""},
		{"verify small block", func(o *Options) { o.Verify.Kind, o.BlockSize = "sha512", 64 }, "--bs 64"},
		{"verify with compression", func(o *Options) { o.Verify.Kind, o.Data.CompressPct = "md5", 50 }, "own checked blocks"},
		{"verify null", func(o *Options) { o.Verify.Kind, o.Engine = "md5", EngineNull }, "null engine"},
		{"verify_only of a read job", func(o *Options) { o.Verify.Kind, o.Verify.Only = "md5", true }, "--verify_only with --rw read"},
		{"verify_only unreplayable", func(o *Options) {
			o.Verify.Kind, o.Verify.Only, o.RW, o.Engine, o.IODepth = "md5", true, RandWrite, EnginePsyncPool, 4
		}, "cannot be replayed"},
		{"verify_backlog without verify", func(o *Options) { o.Verify.Backlog = 8 }, "need --verify"},
	}
	for _, tc := range tests {
		o := valid()
		tc.edit(&o)
		err := o.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

func TestAutoEngine(t *testing.T) {
	t.Parallel()
	for depth, want := range map[int]string{1: EnginePsync, 2: EngineIOUring, 32: EngineIOUring} {
		o := valid()
		o.IODepth = depth
		w, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		if got := w.Params()["ioengine"]; got != want {
			t.Errorf("iodepth %d: engine %s, want %s", depth, got, want)
		}
	}
}

// fio's engine names run as iolab's engines, and psync means what it
// means in fio: one operation in flight per job, whatever iodepth says,
// where psync-pool runs iodepth issuers.
func TestEnginesMeanWhatFioMeans(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		engine        string
		depth         int
		engine2, note string
		depth2        int
	}{
		{"psync", 8, EnginePsync, "iodepth-capped", 1},
		{"psync", 1, EnginePsync, "", 1},
		{"psync-pool", 8, EnginePsyncPool, "", 8},
		{"libaio", 8, EngineIOUring, "fio-engine", 8},
		{"sync", 4, EnginePsync, "iodepth-capped", 1},
	} {
		o := valid()
		o.Engine, o.IODepth = tc.engine, tc.depth
		w, err := New(o)
		if err != nil {
			t.Fatalf("%s: %v", tc.engine, err)
		}
		if got := w.Options(); got.Engine != tc.engine2 || got.IODepth != tc.depth2 || w.Params()["iodepth"] != fmt.Sprint(tc.depth2) {
			t.Errorf("%s --iodepth %d: runs %s at depth %d, want %s at %d", tc.engine, tc.depth, got.Engine, got.IODepth, tc.engine2, tc.depth2)
		}
		var codes []string
		for _, n := range w.notes {
			codes = append(codes, n.Code)
		}
		if tc.note != "" && !slices.Contains(codes, tc.note) || tc.note == "" && len(codes) > 0 {
			t.Errorf("%s --iodepth %d: notes %v, want %q", tc.engine, tc.depth, codes, tc.note)
		}
	}
}

func TestParsePattern(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"read", "write", "randread", "randwrite", "rw", "randrw", "trim", "randtrim"} {
		if p, err := ParsePattern(s); err != nil || string(p) != s {
			t.Errorf("ParsePattern(%q) = %q, %v", s, p, err)
		}
	}
	if p, _ := ParsePattern("readwrite"); p != RW {
		t.Errorf("readwrite -> %q", p)
	}
	if _, err := ParsePattern("trimwrite"); err == nil { // fio's trim then write of each block: not iolab's
		t.Error("trimwrite accepted")
	}
}

func TestFioArgsCarryTheJob(t *testing.T) {
	t.Parallel()
	o := valid()
	o.RW, o.RWMixRead, o.BlockSize, o.IODepth, o.NumJobs, o.Direct = RandRW, 70, 4096, 32, 4, true
	o.Runtime, o.Fsync, o.Data.DedupPct = 10*time.Second, 8, 30
	o.NrFiles, o.OpenFiles, o.RateIOPS, o.ThinkTime, o.ThinkTimeBlocks = 4, 2, [2]int64{0, 500}, 150*time.Microsecond, 8
	o.Verify = Verify{Kind: "md5", Backlog: 32, Do: true}
	args := o.fioArgs()
	for _, want := range []string{"--nrfiles=4", "--filesize=262144", "--openfiles=2", "--rate_iops=0,500", "--thinktime=150",
		"--thinktime_blocks=8", "--verify=md5", "--verify_backlog=32", "--do_verify=1", "--rw=randrw", "--rwmixread=70", "--bs=4096", "--iodepth=32", "--numjobs=4",
		"--direct=1", "--time_based", "--runtime=10000ms", "--fsync=8", "--dedupe_percentage=30", "--directory=/tmp",
		"--ioengine=io_uring", "--output-format=json+", "--group_reporting", "--size=1048576"} {
		if !slices.Contains(args, want) {
			t.Errorf("fio args lack %s: %v", want, args)
		}
	}
}

// fio's json+ latency bins replayed into an HDR histogram must give fio's
// own counts and, within bin resolution, its percentiles.
func TestParseFioJSON(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/fio-3.33-randrw-fsync.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := parseFioJSON(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	read, write, sync := res.ByOp[metrics.Read], res.ByOp[metrics.Write], res.ByOp[metrics.Sync]
	if read.Ops != 36090 || read.Bytes != 147824640 || write.Ops != 15463 || sync.Ops != 8920 {
		t.Fatalf("counts read %d/%d write %d sync %d", read.Ops, read.Bytes, write.Ops, sync.Ops)
	}
	if read.Lat.TotalCount() != read.Ops || sync.Lat.TotalCount() != sync.Ops {
		t.Fatalf("histogram counts %d, %d", read.Lat.TotalCount(), sync.Lat.TotalCount())
	}
	if res.Duration != 1001*time.Millisecond {
		t.Fatalf("duration %v", res.Duration)
	}
	// fio's own p50s from the same output: read 59136, write 41728, sync 342016 ns.
	for name, c := range map[string]struct{ got, fio int64 }{
		"read": {metrics.PercentilesOf(read.Lat).P50, 59136}, "write": {metrics.PercentilesOf(write.Lat).P50, 41728},
		"sync": {metrics.PercentilesOf(sync.Lat).P50, 342016},
	} {
		if math.Abs(float64(c.got-c.fio))/float64(c.fio) > 0.02 {
			t.Errorf("%s p50 %d, fio says %d", name, c.got, c.fio)
		}
	}
	if _, err := parseFioJSON([]byte("fio: some error\n"), nil); err == nil {
		t.Fatal("garbage accepted")
	}
}

func TestLayOutMakesRandomFileOfSize(t *testing.T) {
	t.Parallel()
	o := valid()
	o.Directory, o.Size, o.NumJobs, o.IOSize = t.TempDir(), 3<<20+512, 2, 64<<10
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for j := 0; j < 2; j++ {
		b, err := os.ReadFile(filepath.Join(o.Directory, "iolab."+string(rune('0'+j))+".0"))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != o.Size {
			t.Fatalf("job %d file has %d bytes, want %d", j, len(b), o.Size)
		}
		zeros := 0
		for _, c := range b[:1<<20] {
			if c == 0 {
				zeros++
			}
		}
		if zeros > 1<<20/100 {
			t.Fatalf("laid-out data is not random: %d zero bytes in 1 MiB", zeros)
		}
	}
	res, err := w.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// 64k of 4k reads per job, 2 jobs, and the region ends at a whole block.
	if got := res.ByOp[metrics.Read].Ops; got != 32 {
		t.Fatalf("%d reads, want 32", got)
	}
}

func TestWritesReachTheFile(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{EnginePsync, EngineIOUring} {
		o := valid()
		o.Directory, o.Size, o.RW, o.BlockSize, o.IODepth, o.Engine = t.TempDir(), 1<<20, Write, 64<<10, 4, engine
		o.Data.Zeros = true // the layout is random; zeros written over it are visible
		res, err := run(t, o)
		if err != nil {
			t.Fatal(err)
		}
		if res.ByOp[metrics.Write].Bytes != 1<<20 {
			t.Fatalf("%s: wrote %d bytes", engine, res.ByOp[metrics.Write].Bytes)
		}
		b, _ := os.ReadFile(filepath.Join(o.Directory, "iolab.0.0"))
		for i, c := range b {
			if c != 0 {
				t.Fatalf("%s: byte %d is %d after a sequential pass of zeros", engine, i, c)
			}
		}
	}
}

// fio's null engine needs no file: it does what the job says, in counts,
// with nothing moved.
func TestNullEngine(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Engine, o.Size, o.RW, o.RWMixRead, o.NumJobs = EngineNull, 1<<20, RandRW, 70, 2
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Params()["directory"]; ok {
		t.Errorf("params %v name a directory", w.Params())
	}
	if err := w.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	res, err := w.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// 1 MiB of 4k operations per job, 2 jobs, about 70% reads.
	r, wr := res.ByOp[metrics.Read].Ops, res.ByOp[metrics.Write].Ops
	if r+wr != 512 || r < 300 || r > 420 || res.ByOp[metrics.Read].Bytes != r*4096 {
		t.Errorf("%d reads and %d writes (%d read bytes), want 512 operations, about 70%% reads", r, wr, res.ByOp[metrics.Read].Bytes)
	}
	o.Size = 0
	if _, err := New(o); err == nil || !strings.Contains(err.Error(), "--size is required") {
		t.Errorf("null without --size: %v", err)
	}
}

// A cell made before its target is there (an export a variant's server
// mounts) shows its size as the file's, never 0 (issue 44 item 4); once
// known, the size.
func TestParamsSizeBeforeTheTarget(t *testing.T) {
	o := Options{RW: RandRead, BlockSize: 4096, IODepth: 1, NumJobs: 1}
	if got := o.Params()["size"]; got != SizeOfTheFile {
		t.Errorf("size before the target: %q, want %q", got, SizeOfTheFile)
	}
	o.Size = 1 << 20
	if got := o.Params()["size"]; got != "1m" {
		t.Errorf("size known: %q", got)
	}
}
