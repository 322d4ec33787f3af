package fs

import (
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/driver"
	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/metrics"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload"
)

func init() {
	// fio's own figures of a run fio ran (--ioengine fio), as it reports
	// them: the means of submission, completion and total latency, the
	// completion percentiles, the disks' utilisation, its context switches.
	metrics.DeclareFor("fs",
		metrics.Def{Name: "fio_slat_mean_ns", Label: "fio slat mean", Unit: "ns", Better: metrics.LowerIsBetter, Merge: metrics.MergeMax, PerOp: true},
		metrics.Def{Name: "fio_clat_mean_ns", Label: "fio clat mean", Unit: "ns", Better: metrics.LowerIsBetter, Merge: metrics.MergeMax, PerOp: true},
		metrics.Def{Name: "fio_lat_mean_ns", Label: "fio lat mean", Unit: "ns", Better: metrics.LowerIsBetter, Merge: metrics.MergeMax, PerOp: true},
		metrics.Def{Name: "fio_clat_p50_ns", Label: "fio clat p50", Unit: "ns", Better: metrics.LowerIsBetter, Merge: metrics.MergeMax, PerOp: true},
		metrics.Def{Name: "fio_clat_p99_ns", Label: "fio clat p99", Unit: "ns", Better: metrics.LowerIsBetter, Merge: metrics.MergeMax, PerOp: true},
		metrics.Def{Name: "fio_disk_util_pct", Label: "fio disk util", Unit: "%", Merge: metrics.MergeMax},
		metrics.Def{Name: "fio_ctx", Label: "fio context switches", Unit: "switches", Better: metrics.LowerIsBetter},
		// Each job of a job file fio ran as written, N from 1 in the
		// file's order (the cell's jobs parameter names them).
		metrics.Def{Name: "job.*.ops", Label: "job * operations", Unit: "operations"},
		metrics.Def{Name: "job.*.ops_per_s", Label: "job * IOPS", Unit: "ops/s", Better: metrics.HigherIsBetter},
		metrics.Def{Name: "job.*.bytes_per_s", Label: "job * MiB/s", Unit: "B/s", Bench: "B/s", Better: metrics.HigherIsBetter},
		metrics.Def{Name: "job.*.lat_p99_ns", Label: "job * lat p99", Unit: "ns", Better: metrics.LowerIsBetter, Merge: metrics.MergeRecompute},
		metrics.Def{Name: "job.*.errors", Label: "job * errors", Unit: "operations", Better: metrics.LowerIsBetter, Zeroable: true},
	)
	workload.Register(workload.Kind{
		Name:        "fs",
		Short:       "file and block I/O with fio's options",
		NewOptions:  func() workload.Options { return new(Flags) },
		Splits:      true,
		TouchesDisk: true,
		PathKeys:    []string{"directory", "filename"},
		Primary:     "ops_per_s",
		Metrics:     []string{"ops_per_s", "read.lat_p99_ns", "write.lat_p99_ns", "read.response_p99_ns", "write.response_p99_ns"},
	})
}

// Flags are the fs workload's options as fio names them: the flags of
// `iolab fs` and the keys of a plan's fs: workload, declared once.
type Flags struct {
	Job   Options
	rw    string
	zeros bool
	// bssplit, bsrange and buffer_pattern as given.
	bssplit, bsrange, pattern string
	// timeBased is fio's time_based as given: 1, -1 for 0, or 0 unset.
	timeBased int8
}

// timeBasedValue is the --time_based flag: a switch, and --time_based=0
// makes a job with a runtime do its size, the runtime a bound (in a job
// file too, over its time_based).
type timeBasedValue struct{ p *int8 }

func (v timeBasedValue) String() string {
	return map[int8]string{1: "1", -1: "0"}[*v.p]
}
func (v timeBasedValue) Type() string { return "0|1" }
func (v timeBasedValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want 1 or 0")
	}
	*v.p = map[bool]int8{true: 1, false: -1}[b]
	return nil
}

// AddFlags registers fio's option names: the flags of `iolab fs` and the
// keys of a plan's fs workload.
func (o *Flags) AddFlags(f *pflag.FlagSet) {
	o.Job = DefaultOptions()
	j := &o.Job
	f.StringVar(&j.Filename, "filename", "", "file or block device shared by all jobs")
	f.StringVar(&j.Directory, "directory", "", "directory for one file per job (iolab.<job>.0)")
	f.StringVar(&j.FilenameFormat, "filename_format", "", "the files' names in --directory (default the working directory), as fio's: $jobname, $jobnum, $filenum, $clientuid (fio.$jobnum.$filenum)")
	f.StringVar(&o.rw, "rw", "read", "read|write|randread|randwrite|rw|randrw, with fio's modifier: write:112k (a hole after each block), read:-8k (backwards), randread:8 (8 sequential operations per random offset)")
	flagval.PercentVar(f, &j.RWMixRead, "rwmixread", 50, "percentage of reads in rw/randrw")
	f.Var(flagval.Size{P: &j.BlockSize, Min: 1, Max: 1 << 30, Fio: true}, "bs", "block size (4k, 1m)")
	f.Var(flagval.Size{P: &j.Size, Fio: true}, "size", "file region per job (256m, 1g); default: the existing file's size")
	f.Var(blockSizesValue{p: &j.BlockSizes, parse: parseBSSplit, text: &o.bssplit}, "bssplit",
		"sizes drawn per operation with their shares, as fio's bssplit: 4k/60:64k/40, or READ,WRITE mixes (64k/40:1m/60,1m/100); offsets aligned to the smallest (or --blockalign)")
	f.Var(blockSizesValue{p: &j.BlockSizes, parse: parseBSRange, text: &o.bsrange}, "bsrange", "sizes drawn per operation from MIN-MAX in steps of MIN, as fio's bsrange (4k-64k, or READ,WRITE ranges)")
	f.Var(flagval.Size{P: &j.BlockAlign, Fio: true}, "blockalign", "offsets of operations of drawn sizes aligned to this (default the smallest size), as fio's")
	f.Var(flagval.Size{P: &j.Offset, Fio: true}, "offset", "where each job's region starts in its files, as fio's offset")
	f.Var(flagval.Size{P: &j.OffsetIncrement, Fio: true}, "offset_increment", "each next job's region starts this much further (job J at --offset + J x this), as fio's")
	f.Var(flagval.Size{P: &j.IOSize, Fio: true}, "io_size", "bytes of I/O per job when not time-based (default --size)")
	flagval.IntVar(f, &j.NumberIOs, "number_ios", 0, 0, math.MaxInt64, "stop a job after this many operations, as fio's number_ios: a bound, never more I/O than --size, --io_size or --runtime gives")
	f.Var(flagval.Duration{P: &j.Runtime}, "runtime", "run each job for this long, time-based (60, 60s, 1m)")
	f.Var(steadyValue{&j.Steady}, "steadystate", "end a time-based run once steady, as fio: iops:2% (every second's IOPS within 2% of the window's mean), iops_slope:0.1% (their least-squares slope), bw, bw_slope, or lat (each second's p99); a limit without % is in the figure's unit")
	f.Var(flagval.Duration{P: &j.Steady.Window}, "steadystate_duration", "the rolling window --steadystate judges (30s)")
	f.Var(flagval.Duration{P: &j.Steady.Ramp}, "steadystate_ramp_time", "seconds of each run --steadystate does not judge")
	f.Var(flagval.Duration{P: &j.StartDelay}, "startdelay", "start the job this long after the run starts, as fio's startdelay (beside a job file's other jobs, later than they)")
	f.Var(flagval.Duration{P: &j.RampTime}, "ramp_time", "run each job this long before measuring, as fio does (runtime counts after it)")
	flagval.IntVar(f, &j.IODepth, "iodepth", 1, 1, 16384, "operations in flight per job")
	flagval.IntVar(f, &j.IODepthBatch, "iodepth_batch_submit", 1, 1, 16384, "io_uring: submit when this many operations are queued")
	flagval.IntVar(f, &j.NumJobs, "numjobs", 1, 1, 4096, "parallel jobs")
	f.Var(flagval.BoolInt{P: &j.Direct}, "direct", "O_DIRECT: bypass the page cache (1 or 0)")
	f.Lookup("direct").NoOptDefVal = "1"
	f.Var(flagval.BoolInt{P: &j.NoRandomMap}, "norandommap", "random I/O draws each offset afresh, blocks repeating (1); by default every block of the file is done once before any again, as fio does")
	f.Lookup("norandommap").NoOptDefVal = "1"
	f.Var(timeBasedValue{&o.timeBased}, "time_based", "accepted as fio's (iolab is time-based when --runtime is set); --time_based=0 makes a job with a runtime do its size, the runtime a bound, a job file's jobs too")
	f.Lookup("time_based").NoOptDefVal = "1"
	f.Var(flagval.BoolInt{P: &j.RuntimeCaps}, "runtime_caps", "--runtime bounds a job that does its size (a job file's runtime without time_based, as fio reads it), instead of making it time-based")
	_ = f.MarkHidden("runtime_caps")
	flagval.IntVar(f, &j.Loops, "loops", 1, 1, 1_000_000, "do the job's size (or io_size) this many times when not time-based, as fio's loops")
	flagval.IntVar(f, &j.RandSeed, "randseed", 0, 0, math.MaxInt64, "seed of the random offsets and directions (0: iolab's own), the same every run, as fio's randseed")
	f.Var(flagval.BoolInt{P: &j.NoRandRepeat, Not: true}, "randrepeat", "1: the same random offsets and directions every run (the default, as fio's); 0: others each run")
	f.Var(distributionValue{&j.Distribution}, "random_distribution", "where random offsets fall, as fio's: random (uniform), zipf:THETA[:CENTRE], pareto:H[:CENTRE], normal:DEV%[:CENTRE], zoned:ACCESS%/RANGE%:..., zoned_abs:ACCESS%/SIZE:... (a few hot blocks, spread over the file unless a centre 0..1 is given; no random map)")
	f.Var(flagval.BoolInt{P: &j.Thread}, "thread", "run the jobs as threads of one process (1), as fio's thread option; by default each job is a process in a session of its own, as fio's jobs are (0)")
	f.Lookup("thread").NoOptDefVal = "1"
	f.Var(flagval.BoolInt{P: &j.Invalidate}, "invalidate", "drop the files' page cache before each run, as fio does (1 or 0)")
	flagval.IntVar(f, &j.Fsync, "fsync", 0, 0, flagval.MaxCount, "fsync after every N writes")
	flagval.IntVar(f, &j.Fdatasync, "fdatasync", 0, 0, flagval.MaxCount, "fdatasync after every N writes")
	f.StringVar(&j.Engine, "ioengine", DefaultEngine, "auto|psync|psync-pool|io_uring|fio, or fio's libaio, sync, pvsync (auto: io_uring when iodepth > 1, else psync; psync has one operation in flight per job as fio's does, psync-pool iodepth; fio runs fio itself on the same job)")
	flagval.PercentVar(f, &j.Data.CompressPct, "buffer_compress_percentage", 0, "percentage of each written block that compresses (zeros)")
	flagval.PercentVar(f, &j.Data.DedupPct, "dedupe_percentage", 0, "percentage of written blocks that repeat earlier ones")
	f.Var(patternValue{&j.Data.Repeat, &o.pattern}, "buffer_pattern", "fill every written block with this, repeated, as fio's: hex (0xdeadbeef) or a quoted string")
	f.BoolVar(&o.zeros, "zero_buffers", false, "write zeros instead of random data")
	f.StringVar(&j.FioPath, "fio", "fio", "fio binary for --ioengine fio")
	flagval.IntVar(f, &j.NrFiles, "nrfiles", 1, 1, 1<<20, "files per job, served round robin (iolab.<job>.<file> in --directory)")
	f.Var(flagval.Size{P: &j.FileSize, Fio: true}, "filesize", "size of each file (default --size / --nrfiles)")
	flagval.IntVar(f, &j.OpenFiles, "openfiles", 0, 0, 1<<20, "files a job keeps open at a time (default all): each closes when its pass is done and the next opens")
	f.Var(pairValue{p: &j.Rate, parse: units.ParseFioSize, format: units.FormatSize}, "rate", "cap each job's bandwidth, bytes/s: 10m, or READ,WRITE (500k,1m; ,1m caps writes only)")
	f.Var(pairValue{p: &j.RateIOPS, parse: func(s string) (int64, error) { return units.ParseInt(s, 1, flagval.MaxRate) },
		format: func(n int64) string { return fmt.Sprint(n) }}, "rate_iops", "cap each job's operations/s: 1000, or READ,WRITE")
	f.Var(&j.RateProcess, "rate_process", "how --rate/--rate_iops space the starts: linear (evenly) or poisson (exponential gaps of the same mean: independent clients' arrivals, bursts included; the same for every variant in a round), as fio's rate_process")
	f.Var(flagval.Duration{P: &j.ThinkTime, Unit: time.Microsecond}, "thinktime", "pause this long after every --thinktime_blocks operations complete (microseconds, or 10ms)")
	flagval.IntVar(f, &j.ThinkTimeBlocks, "thinktime_blocks", 1, 1, flagval.MaxCount, "operations between two thinktime pauses")
	f.Var(syncRangeValue{&j.SyncFileRange}, "sync_file_range", "sync_file_range(2) after every N writes: FLAGS:N, flags wait_before,write,wait_after (write:8)")
	f.StringVar(&j.Verify.Kind, "verify", "", "write checked blocks and read them back: md5, crc32c, crc32, crc64, xxhash, sha1, sha256, sha512; a read job checks what it reads")
	flagval.IntVar(f, &j.Verify.Backlog, "verify_backlog", 0, 0, flagval.MaxCount, "read back and check every N written blocks as the job goes (counted as its reads)")
	f.Var(flagval.BoolInt{P: &j.Verify.Only}, "verify_only", "check the blocks the write job would write, writing nothing (1 or 0)")
	f.Lookup("verify_only").NoOptDefVal = "1"
	f.Var(flagval.BoolInt{P: &j.Verify.Do}, "do_verify", "read back everything written once the run ends (1, the default, or 0)")
}

// Options resolves the parsed flags into the workload's options.
func (o *Flags) Options() (Options, error) {
	j := o.Job
	if err := j.parseRW(o.rw); err != nil {
		return Options{}, fmt.Errorf("--rw %w", err)
	}
	j.Data.Zeros = o.zeros
	if o.bssplit != "" && o.bsrange != "" {
		return Options{}, fmt.Errorf("--bssplit and --bsrange: give one")
	}
	j.resolveBlockSizes()
	if o.timeBased < 0 && j.Runtime > 0 {
		j.RuntimeCaps = true
	}
	if j.FilenameFormat != "" && j.Directory == "" && j.Filename == "" {
		j.Directory = "." // fio's: the working directory
	}
	if j.Filename != "" && j.Directory != "" {
		// fio's: the directory is prefixed to the file's name.
		j.Filename, j.Directory = filepath.Join(j.Directory, j.Filename), ""
	}
	return j, nil
}

// Build implements workload.Options.
func (o *Flags) Build(b workload.Build) (workload.Workload, string, error) {
	job, err := o.Options()
	if err != nil {
		return nil, "", err
	}
	target := job.Directory
	if target == "" {
		target = job.Filename
	}
	job.Segment = b.Segment
	w, err := New(job)
	return w, target, err
}

// PaceKey implements workload.Pacer: fio's rate_iops.
func (o *Flags) PaceKey() string { return "rate_iops" }

// Pace implements workload.Pacer: each job's reads and writes per second,
// each at share of what a job of max did in that direction (at least 1).
func (o *Flags) Pace(max *metrics.Result, share float64) {
	for i, op := range []metrics.Op{metrics.Read, metrics.Write} {
		o.Job.RateIOPS[i] = 0
		if n := max.ByOp[op].Ops; n > 0 {
			o.Job.RateIOPS[i] = int64(math.Max(1, math.Round(share*max.RateOf(op, n)/float64(o.Job.NumJobs))))
		}
	}
}

// AtLeast implements workload.Lengthener: a paced time-based run holds at
// least ops reads and writes at its jobs' rates, up to
// workload.MaxLengthened times the runtime asked (one of a size is as long
// as its size, which is the user's).
func (o *Flags) AtLeast(ops int64) bool {
	rate := float64(o.Job.RateIOPS[0]+o.Job.RateIOPS[1]) * float64(o.Job.NumJobs)
	var longer bool
	o.Job.Runtime, longer = workload.Lengthened(o.Job.Runtime, rate, ops)
	return longer
}

// PacedLater implements workload.Pacer.
func (o *Flags) PacedLater() { o.Job.PacedLater = true }

// FlatOut implements workload.Pacer.
func (o *Flags) FlatOut() { o.Job.RateProcess = driver.Linear }

// pairValue is fio's READ,WRITE form of rate and rate_iops.
type pairValue struct {
	p      *[2]int64
	parse  func(string) (int64, error)
	format func(int64) string
}

func (v pairValue) String() string {
	if v.p == nil || *v.p == [2]int64{} {
		return "0"
	}
	if v.p[0] == v.p[1] {
		return v.format(v.p[0])
	}
	return v.format(v.p[0]) + "," + v.format(v.p[1])
}
func (v pairValue) Type() string { return "value[,write]" }
func (v pairValue) Set(s string) error {
	p, err := ParsePair(s, v.parse)
	if err != nil {
		return err
	}
	*v.p = p
	return nil
}

// syncRangeValue is fio's sync_file_range=FLAGS:N.
type syncRangeValue struct{ p *SyncRange }

func (v syncRangeValue) String() string {
	if v.p == nil || v.p.Every == 0 {
		return ""
	}
	return v.p.String()
}
func (v syncRangeValue) Type() string { return "flags:N" }
func (v syncRangeValue) Set(s string) error {
	r, err := ParseSyncRange(s)
	if err != nil {
		return err
	}
	*v.p = r
	return nil
}

// steadyValue is fio's steadystate=CRITERION:LIMIT.
type steadyValue struct{ p *driver.SteadyState }

func (v steadyValue) String() string {
	if v.p == nil {
		return ""
	}
	return v.p.String()
}
func (v steadyValue) Type() string { return "criterion:limit" }
func (v steadyValue) Set(s string) error {
	ss, err := driver.ParseSteadyState(s)
	if err != nil {
		return err
	}
	v.p.Criterion, v.p.Limit, v.p.Percent = ss.Criterion, ss.Limit, ss.Percent
	return nil
}

// distributionValue is fio's random_distribution.
type distributionValue struct{ p *Distribution }

func (v distributionValue) String() string {
	if v.p == nil {
		return "random"
	}
	return v.p.String()
}
func (v distributionValue) Type() string { return "distribution" }
func (v distributionValue) Set(s string) error {
	d, err := ParseDistribution(s)
	if err != nil {
		return err
	}
	*v.p = d
	return nil
}
