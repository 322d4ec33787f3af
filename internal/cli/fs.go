package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iolab/iolab/internal/flagval"
	"github.com/iolab/iolab/internal/lab"
	"github.com/iolab/iolab/internal/report"
	"github.com/iolab/iolab/internal/units"
	"github.com/iolab/iolab/internal/workload/fs"
)

// FSOptions are the flags of `iolab fs`, in fio's vocabulary.
type FSOptions struct {
	Job    fs.Options
	rw     string
	zeros  bool
	name   string // the result's label, as fio's --name
	Repeat RepeatOptions
}

// AddFlags registers fio's option names.
func (o *FSOptions) AddFlags(f *pflag.FlagSet) {
	o.AddJobFlags(f)
	o.addNameFlag(f)
	o.Repeat.AddFlags(f)
	// fio options that describe what iolab always does: accepted so that a
	// fio command line runs unchanged.
	f.Var(fioOutputValue{&o.Repeat.Format}, "output-format", "fio's: normal (iolab's report), json or json+ (fio's JSON shape: --format fio, fio+)")
	for _, name := range []string{"time_based", "group_reporting", "thread"} {
		f.Bool(name, false, "accepted as fio's; no effect (iolab is time-based when --runtime is set, merges jobs, runs threads)")
		_ = f.MarkHidden(name)
	}
}

// AddJobFlags registers the options of the job itself, which plan files
// use as the keys of an fs workload.
func (o *FSOptions) AddJobFlags(f *pflag.FlagSet) {
	o.Job = fs.DefaultOptions()
	j := &o.Job
	f.StringVar(&j.Filename, "filename", "", "file or block device shared by all jobs")
	f.StringVar(&j.Directory, "directory", "", "directory for one file per job (iolab.<job>.0)")
	f.StringVar(&o.rw, "rw", "read", "read|write|randread|randwrite|rw|randrw")
	flagval.PercentVar(f, &j.RWMixRead, "rwmixread", 50, "percentage of reads in rw/randrw")
	f.Var(flagval.Size{P: &j.BlockSize, Min: 1, Max: 1 << 30}, "bs", "block size (4k, 1m)")
	f.Var(flagval.Size{P: &j.Size}, "size", "file region per job (256m, 1g); default: the existing file's size")
	f.Var(flagval.Size{P: &j.IOSize}, "io_size", "bytes of I/O per job when not time-based (default --size)")
	f.Var(flagval.Duration{P: &j.Runtime}, "runtime", "run each job for this long, time-based (60, 60s, 1m)")
	f.Var(flagval.Duration{P: &j.RampTime}, "ramp_time", "run each job this long before measuring, as fio does (runtime counts after it)")
	flagval.IntVar(f, &j.IODepth, "iodepth", 1, 1, 16384, "operations in flight per job")
	flagval.IntVar(f, &j.IODepthBatch, "iodepth_batch_submit", 1, 1, 16384, "io_uring: submit when this many operations are queued")
	flagval.IntVar(f, &j.NumJobs, "numjobs", 1, 1, 4096, "parallel jobs")
	f.Var(flagval.BoolInt{P: &j.Direct}, "direct", "O_DIRECT: bypass the page cache (1 or 0)")
	f.Lookup("direct").NoOptDefVal = "1"
	f.Var(flagval.BoolInt{P: &j.Invalidate}, "invalidate", "drop the files' page cache before each run, as fio does (1 or 0)")
	flagval.IntVar(f, &j.Fsync, "fsync", 0, 0, flagval.MaxCount, "fsync after every N writes")
	flagval.IntVar(f, &j.Fdatasync, "fdatasync", 0, 0, flagval.MaxCount, "fdatasync after every N writes")
	f.StringVar(&j.Engine, "ioengine", fs.DefaultEngine, "auto|psync|psync-pool|io_uring|fio, or fio's libaio, sync, pvsync (auto: io_uring when iodepth > 1, else psync; psync has one operation in flight per job as fio's does, psync-pool iodepth; fio runs fio itself on the same job)")
	flagval.PercentVar(f, &j.Data.CompressPct, "buffer_compress_percentage", 0, "percentage of each written block that compresses (zeros)")
	flagval.PercentVar(f, &j.Data.DedupPct, "dedupe_percentage", 0, "percentage of written blocks that repeat earlier ones")
	f.BoolVar(&o.zeros, "zero_buffers", false, "write zeros instead of random data")
	f.StringVar(&j.FioPath, "fio", "fio", "fio binary for --ioengine fio")
	flagval.IntVar(f, &j.NrFiles, "nrfiles", 1, 1, 1<<20, "files per job, served round robin (iolab.<job>.<file> in --directory)")
	f.Var(flagval.Size{P: &j.FileSize}, "filesize", "size of each file (default --size / --nrfiles)")
	flagval.IntVar(f, &j.OpenFiles, "openfiles", 0, 0, 1<<20, "files a job keeps open at a time (default all): each closes when its pass is done and the next opens")
	f.Var(pairValue{p: &j.Rate, parse: units.ParseSize, format: units.FormatSize}, "rate", "cap each job's bandwidth, bytes/s: 10m, or READ,WRITE (500k,1m; ,1m caps writes only)")
	f.Var(pairValue{p: &j.RateIOPS, parse: func(s string) (int64, error) { return units.ParseInt(s, 1, flagval.MaxRate) },
		format: func(n int64) string { return fmt.Sprint(n) }}, "rate_iops", "cap each job's operations/s: 1000, or READ,WRITE")
	f.Var(flagval.Duration{P: &j.ThinkTime, Unit: time.Microsecond}, "thinktime", "pause this long after every --thinktime_blocks operations complete (microseconds, or 10ms)")
	flagval.IntVar(f, &j.ThinkTimeBlocks, "thinktime_blocks", 1, 1, flagval.MaxCount, "operations between two thinktime pauses")
	f.Var(syncRangeValue{&j.SyncFileRange}, "sync_file_range", "sync_file_range(2) after every N writes: FLAGS:N, flags wait_before,write,wait_after (write:8)")
	f.StringVar(&j.Verify.Kind, "verify", "", "write checked blocks and read them back: md5, crc32c, crc32, crc64, xxhash, sha1, sha256, sha512; a read job checks what it reads")
	flagval.IntVar(f, &j.Verify.Backlog, "verify_backlog", 0, 0, flagval.MaxCount, "read back and check every N written blocks as the job goes (counted as its reads)")
	f.Var(flagval.BoolInt{P: &j.Verify.Only}, "verify_only", "check the blocks the write job would write, writing nothing (1 or 0)")
	f.Lookup("verify_only").NoOptDefVal = "1"
	f.Var(flagval.BoolInt{P: &j.Verify.Do}, "do_verify", "read back everything written once the run ends (1, the default, or 0)")
}

// fioOutputValue is fio's --output-format, which sets --format.
type fioOutputValue struct{ p *string }

func (v fioOutputValue) String() string { return "normal" }
func (v fioOutputValue) Type() string   { return "normal|json|json+" }
func (v fioOutputValue) Set(s string) error {
	f, ok := map[string]string{"normal": "text", "json": report.FormatFio, "json+": report.FormatFioPlus}[s]
	if !ok {
		return fmt.Errorf("want normal, json or json+ (fio's terse is not written)")
	}
	*v.p = f
	return nil
}

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
	p, err := fs.ParsePair(s, v.parse)
	if err != nil {
		return err
	}
	*v.p = p
	return nil
}

// syncRangeValue is fio's sync_file_range=FLAGS:N.
type syncRangeValue struct{ p *fs.SyncRange }

func (v syncRangeValue) String() string {
	if v.p == nil || v.p.Every == 0 {
		return ""
	}
	return v.p.String()
}
func (v syncRangeValue) Type() string { return "flags:N" }
func (v syncRangeValue) Set(s string) error {
	r, err := fs.ParseSyncRange(s)
	if err != nil {
		return err
	}
	*v.p = r
	return nil
}

func (o *FSOptions) addNameFlag(f *pflag.FlagSet) {
	f.StringVar(&o.name, "name", "", "the job's name, its label in reports (default: from the options, e.g. randrw70-4k-qd32x4-direct)")
}

// fioJobs returns the jobs of a fio job file as options, each over the fs
// flags' defaults with the job file's options and, over those, the job
// flags given on the command line; notes go to stderr.
func fioJobs(path string, cmdFlags *pflag.FlagSet, stderr io.Writer) ([]FSOptions, error) {
	jobs, err := readFioJobs(path)
	if err != nil {
		return nil, err
	}
	given := map[string]string{}
	cmdFlags.Visit(func(f *pflag.Flag) { given[f.Name] = f.Value.String() })
	if _, ok := given["name"]; ok && len(jobs) > 1 {
		return nil, fmt.Errorf("--name: %s has %d jobs, named by their sections", path, len(jobs))
	}
	out := make([]FSOptions, len(jobs))
	for i, j := range jobs {
		flags := pflag.NewFlagSet(j.name, pflag.ContinueOnError)
		out[i].AddJobFlags(flags)
		out[i].addNameFlag(flags)
		cmdline := map[string]bool{}
		for name, v := range given {
			if flags.Lookup(name) != nil {
				if err := flagval.Set(flags, name, v); err != nil {
					return nil, fmt.Errorf("--%s %q: %w", name, v, err)
				}
				cmdline[name] = true
			}
		}
		notes, err := j.apply(flags, cmdline)
		if err != nil {
			return nil, err
		}
		for _, n := range notes {
			fmt.Fprintf(stderr, "iolab: [%s] %s\n", j.name, n)
		}
	}
	return out, nil
}

// job resolves the parsed flags into the workload's options.
func (o *FSOptions) job() (fs.Options, error) {
	pattern, err := fs.ParsePattern(o.rw)
	if err != nil {
		return fs.Options{}, fmt.Errorf("--rw %w", err)
	}
	j := o.Job
	j.RW, j.Data.Zeros = pattern, o.zeros
	return j, nil
}

func newFSCommand(stdout, stderr io.Writer) *cobra.Command {
	var o FSOptions
	cmd := &cobra.Command{
		Use:   "fs [JOBFILE]",
		Short: "File and block I/O with fio's options, repeated in rounds and stored",
		Example: `  iolab fs --directory /mnt/data --rw=randrw --rwmixread=70 --bs=4k --iodepth=32 --numjobs=4 --size=128m --direct=1 --runtime=10s
  iolab fs --filename /dev/nvme0n1 --rw=randread --bs=4k --iodepth=32 --runtime=30 --ioengine=fio
  iolab fs job.fio --runtime=30s     # a fio job file's [global] and one [job]; flags win over it`,
		Args: maxOneArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			jobs := []FSOptions{o}
			if len(args) == 1 {
				var err error
				if jobs, err = fioJobs(args[0], cmd.Flags(), stderr); err != nil {
					return &UsageError{Err: err}
				}
			}
			return runFS(cmd.Context(), o.Repeat, jobs, commandLine(cmd), stdout, stderr)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// runFS runs the jobs as the cells of one experiment.
func runFS(ctx context.Context, repeat RepeatOptions, jobs []FSOptions, command string, stdout, stderr io.Writer) error {
	if err := repeat.validate(); err != nil {
		return err
	}
	var cells []lab.Cell
	var settings []map[string]string
	var runtime time.Duration
	for _, o := range jobs {
		job, err := o.job()
		if err != nil {
			return &UsageError{Err: err}
		}
		job.Segment = repeat.Segment
		w, err := fs.New(job)
		if err != nil {
			return &UsageError{Err: err}
		}
		target := job.Filename
		if target == "" {
			target = job.Directory
		}
		name := o.name
		if name == "" {
			name = fsCellName(w.Options()) // what runs: psync caps iodepth
		}
		cells = append(cells, lab.Cell{Name: name, Workload: w, Target: target})
		settings = append(settings, w.Params())
		runtime = max(runtime, job.Runtime)
	}
	plan := lab.Plan{Name: "fs", Command: command, Settings: settings[0]}
	if len(settings) > 1 {
		plan.Settings = settings
	}
	return runExperiment(ctx, repeat, plan, cells, runtime, stdout, stderr)
}

// fsCellName is a short label: "randrw70-4k-qd32x4-direct".
func fsCellName(j fs.Options) string {
	name := string(j.RW)
	if j.RW == fs.RW || j.RW == fs.RandRW {
		name += fmt.Sprint(j.RWMixRead)
	}
	name += "-" + units.FormatSize(j.BlockSize)
	if j.IODepth > 1 || j.NumJobs > 1 {
		name += fmt.Sprintf("-qd%dx%d", j.IODepth, j.NumJobs)
	}
	if j.Direct {
		name += "-direct"
	}
	return name
}
